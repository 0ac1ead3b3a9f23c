// Packets NetworkPolicy dropped, per pod and direction: the counter of the final `counter drop`
// of each pod chain (ingress_VETH, egress_VETH), read from `nft -j list table inet flock` and
// kept as running totals. A chain that was replaced starts again at 0 (a full replace every
// self-heal pass, a changed pod chain): such a drop in the kernel's value is taken as a reset,
// so totals never go down; packets dropped between the last read and a replace are not counted.
import { run } from '@flock/exec';
import { steadyNow } from '@flock/ipam';
import { TABLE_FAMILY, TABLE_NAME } from '@flock/netpol';
import { z } from 'zod';
import { hostVethName } from '../datapath/index.js';
import type { AllocationStore } from '../store/index.js';
import { netnsName } from './nft.js';

/** `nft -j list table inet flock` (its stdout). */
export type NftListTable = () => Promise<string>;

export function nftListTable(hostNetns: string | undefined): NftListTable {
  const nft = ['nft', '-j', 'list', 'table', TABLE_FAMILY, TABLE_NAME];
  const [file, args] =
    hostNetns === undefined
      ? ['nft', nft.slice(1)]
      : ['ip', ['netns', 'exec', netnsName(hostNetns), ...nft]];
  return async () => (await run(file, args, { timeoutMs: 10_000 })).stdout;
}

const Rule = z.looseObject({
  rule: z.looseObject({ chain: z.string(), expr: z.array(z.record(z.string(), z.unknown())) }),
});
const Listing = z.object({ nftables: z.array(z.unknown()) });
const Counter = z.looseObject({ packets: z.int().min(0) });

export type Direction = 'ingress' | 'egress';

/** Chain → packets of its counted drop, for the pod chains of a listing. */
export function parseDropCounters(json: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const item of Listing.parse(JSON.parse(json)).nftables) {
    const r = Rule.safeParse(item);
    if (!r.success || !/^(ingress|egress)_/.test(r.data.rule.chain)) continue;
    const { expr } = r.data.rule;
    const counter = expr.find((e) => 'counter' in e);
    if (!counter || !expr.some((e) => 'drop' in e)) continue;
    const c = Counter.safeParse(counter['counter']);
    if (c.success) out.set(r.data.rule.chain, c.data.packets);
  }
  return out;
}

export interface PodDrops {
  namespace: string;
  pod: string;
  direction: Direction;
  /** Running total since the agent started. */
  packets: number;
}

export class DropCounters {
  private readonly last = new Map<string, number>();
  private readonly totals = new Map<string, number>();
  /** The read in progress (every scrape meanwhile shares it) and the last one's answer. */
  private reading: Promise<PodDrops[]> | undefined;
  private lastRead: { at: number; drops: PodDrops[] } | undefined;

  constructor(
    private readonly list: NftListTable,
    /** The local pods by host veth. */
    private readonly pods: () => Map<string, { namespace: string; pod: string }>,
    /** An answer younger than this is given again without listing the table. */
    private readonly maxAgeMs = 1000,
    private readonly now: () => number = steadyNow,
  ) {}

  /**
   * The running totals of the pods that have a chain. One `nft` listing at a time, at most one
   * per maxAgeMs however many scrapers ask: a listing is the costly part, and two overlapping
   * reads finishing out of order would count one's older values as a reset.
   */
  read(): Promise<PodDrops[]> {
    const fresh = this.lastRead && this.now() - this.lastRead.at < this.maxAgeMs;
    if (fresh) return Promise.resolve(this.lastRead!.drops.map((d) => ({ ...d })));
    this.reading ??= this.readNow().finally(() => (this.reading = undefined));
    return this.reading.then((drops) => drops.map((d) => ({ ...d })));
  }

  private async readNow(): Promise<PodDrops[]> {
    let counters: Map<string, number>;
    try {
      counters = parseDropCounters(await this.list());
    } catch {
      counters = new Map(); // no table yet (or nft failed): nothing to add
    }
    const pods = this.pods();
    const out: PodDrops[] = [];
    for (const [chain, packets] of counters) {
      const [direction, veth] = chain.split(/_(.*)/s) as [Direction, string];
      const before = this.last.get(chain) ?? 0;
      const added = packets >= before ? packets - before : packets;
      this.last.set(chain, packets);
      const total = (this.totals.get(chain) ?? 0) + added;
      this.totals.set(chain, total);
      const pod = pods.get(veth);
      if (pod) out.push({ ...pod, direction, packets: total });
    }
    for (const chain of [...this.last.keys()])
      if (!counters.has(chain)) {
        this.last.delete(chain);
        this.totals.delete(chain);
      }
    this.lastRead = { at: this.now(), drops: out };
    return out;
  }
}

/** Drop counters of the pods in the allocation store (by their host veths). */
export function storeDropCounters(
  list: NftListTable,
  store: Pick<AllocationStore, 'entries'>,
): DropCounters {
  return new DropCounters(
    list,
    () =>
      new Map(
        store
          .entries()
          .map((e) => [
            hostVethName(e.containerID, e.ifname),
            { namespace: e.namespace, pod: e.pod },
          ]),
      ),
  );
}
