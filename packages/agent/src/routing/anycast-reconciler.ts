// One host route per anycast address: multipath with one nexthop per Ready local pod (sorted),
// a plain route when there is one, none when there is none. Desired state comes from the
// announcement plan (committed allocations × live, Ready pods). The kernel's anycast routes
// (protocol 242) are read once per pass and only differing addresses are written, so a quiet
// pass writes nothing. A node with no anycast pod, whose last pass found and left no such
// route, reads only every `verifyMs` (a stray route is still removed): passes run on every ADD,
// DEL and readiness change and every 2 s, and each read is an `ip` process: half of an idle
// agent's CPU. Routes of protocol 242 that nothing wants are removed: the reconciler
// owns them.
import type { Logger } from '@flock/api';
import { canonicalAddress } from '@flock/ipam';
import type { Datapath } from '../datapath/index.js';

interface AnycastPass {
  /** Addresses whose route was added, changed or removed. */
  changed: string[];
  /** Addresses whose route could not be written (retried next pass). */
  failed: string[];
}

interface AnycastReconcilerDeps {
  datapath: Pick<Datapath, 'listAnycastRoutes' | 'ensureAnycastRoute'>;
  /** Address → host veths; undefined while it is not known yet (pod cache not synced). */
  desired: () => ReadonlyMap<string, readonly string[]> | undefined;
  logger: Logger;
  /** How long a node without anycast pods leaves the kernel unread (default 30 s). */
  verifyMs?: number;
  /** A steady clock in ms (tests). */
  now?: () => number;
}

const DEFAULT_VERIFY_MS = 30_000;

const same = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((x, i) => x === b[i]);

export class AnycastReconciler {
  /** The last pass read the kernel, wanted no route, and left none. */
  private clean = false;
  private verifiedAt = -Infinity;
  /** Kernel reads so far (each is an `ip` process). */
  reads = 0;

  constructor(private readonly deps: AnycastReconcilerDeps) {}

  async reconcile(): Promise<AnycastPass> {
    const pass: AnycastPass = { changed: [], failed: [] };
    const desired = this.deps.desired();
    if (!desired) return pass;
    const want = new Map<string, string[]>();
    for (const [ip, veths] of desired)
      want.set(canonicalAddress(ip) ?? ip, [...new Set(veths)].sort());
    const now = (this.deps.now ?? performance.now.bind(performance))();
    const verifyMs = this.deps.verifyMs ?? DEFAULT_VERIFY_MS;
    // With anycast pods every pass reads: a veth made again under the same name loses its
    // routes without the desired state changing.
    if (!want.size && this.clean && now - this.verifiedAt < verifyMs) return pass;
    this.clean = false;
    this.reads++;
    this.verifiedAt = now;
    const have = new Map<string, string[]>();
    for (const r of await this.deps.datapath.listAnycastRoutes())
      have.set(canonicalAddress(r.ip) ?? r.ip, [...r.hostVeths].sort());

    for (const ip of [...new Set([...want.keys(), ...have.keys()])].sort()) {
      const wanted = want.get(ip) ?? [];
      if (same(wanted, have.get(ip) ?? [])) continue;
      try {
        const result = await this.deps.datapath.ensureAnycastRoute(ip, wanted);
        if (result.changed) {
          pass.changed.push(ip);
          this.deps.logger.info('anycast route updated', { ip, hostVeths: result.hostVeths });
        }
        for (const s of result.skipped)
          this.deps.logger.warn('anycast nexthop left out', { ip, ...s });
      } catch (error) {
        pass.failed.push(ip);
        this.deps.logger.error('could not update an anycast route', { ip, error: String(error) });
      }
    }
    this.clean = !want.size && !pass.failed.length;
    return pass;
  }
}
