// `node dist/bench/hostport-dnat.js [--rounds N] [--flows N]` (root; python3, conntrack, nft):
// the cost of flock's hostPort DNAT, figures for docs/benchmarks.md. In a PolicyLab (node
// namespace with flock's real table, one pod, the "remote" namespace outside the node), a
// sender in the remote namespace writes IPv4 UDP datagrams to the node's address and a hostPort
// (hostport-flood.py), DNATed to the pod:
//   new flows: N datagrams, each from its own source port: each is a new conntrack entry, so
//     each walks the nat chains (conntrack flushed before each sample);
//   one flow:  N datagrams of one flow: only the first walks the nat chains, the others find
//     their conntrack entry (already NATed) — the per-packet cost of an established flow.
// Variants, interleaved in every round (order reversed every other round):
//   a  flock, 1 hostPort mapping (the target);
//   b  flock, 1,000 mappings in its maps (the target among them);
//   c  the same 1,000 mappings as 1,000 sequential nft rules (a naive table written here, not
//      flock's; the target last: every rule is evaluated), flock's maps empty;
//   d  no DNAT: the same datagrams sent to the pod's address and port directly (table of a).
// And the sender alone: the same frames to a MAC the node does not own (dropped on arrival).
// A veth hands a frame to its peer in the sender's own system call, so the send loop's time is
// the whole path's. A sample's rate is its median chunk's (hostport-flood.py times the loop in
// chunks of 20: a chunk the scheduler interrupted is an outlier); the whole loop's rate, of
// datagrams the pod received (its eth0), is printed too, and a sample where the pod received
// fewer than 99 % of the datagrams stops the bench. Not a test.
import type { ChildProcess } from 'node:child_process';
import type { HostPort } from '@flock/api';
import { run } from '@flock/exec';
import { PolicyLab, UPLINK, type Endpoint } from '../testing/lab.js';
import {
  floodSample,
  floodSender,
  kilo,
  macOf,
  med,
  option,
  spawnFlood,
  spread,
  type FloodKind,
  type Sample,
} from './flood.js';

const WEB: Endpoint = {
  ref: 'bench/web',
  kind: 'pod',
  local: true,
  ns: 'bench',
  pod: 'web',
  labels: { app: 'web' },
  v4: '10.250.0.2',
  v6: 'fd00:250::2',
};
const POD4 = WEB.v4 as string;
const CONTAINER_PORT = 9;
const MAPPINGS = 1000;
const FIRST_HOST_PORT = 20000;
const TARGET_HOST_PORT = FIRST_HOST_PORT + MAPPINGS - 1;
const NAIVE_TABLE = 'hostport_naive';
/** A MAC nobody in the lab owns: the node's uplink drops such frames on arrival. */
const NOBODY_MAC = '02:00:00:00:00:01';

const mapping = (hostPort: number): HostPort => ({
  protocol: 'udp',
  hostPort,
  containerPort: CONTAINER_PORT,
});
const ALL: HostPort[] = Array.from({ length: MAPPINGS }, (_, i) => mapping(FIRST_HOST_PORT + i));

/** c: one rule per mapping, in order, behind the same `fib daddr type local` test as flock's. */
const NAIVE_SCRIPT = [
  `table ip ${NAIVE_TABLE} {`,
  '\tchain mappings {',
  ...ALL.map((m) => `\t\tudp dport ${m.hostPort} dnat to ${POD4}:${m.containerPort}`),
  '\t}',
  '\tchain prerouting {',
  '\t\ttype nat hook prerouting priority -90; policy accept;',
  '\t\tfib daddr type local jump mappings',
  '\t}',
  '}',
  '',
].join('\n');

const VARIANTS = ['a', 'b', 'c', 'd'] as const;
type Variant = (typeof VARIANTS)[number];
const KINDS: readonly FloodKind[] = ['new', 'one'];
type Kind = FloodKind;

const LABEL: Record<Variant, string> = {
  a: 'a: flock, 1 mapping',
  b: 'b: flock, 1,000 mappings (maps)',
  c: 'c: 1,000 sequential nft rules (target last)',
  d: "d: no DNAT (the pod's address)",
};

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('hostport-dnat: run as root (namespaces, nft)');
  const rounds = option('--rounds', 10);
  const flows = option('--flows', 50_000);
  if (!(flows > 0 && flows <= 64_000)) throw new Error('--flows: 1 to 64,000 (source ports)');
  const load = (await run('cat', ['/proc/loadavg'])).stdout.split(' ').slice(0, 3).join(' ');
  console.log(
    `# hostPort DNAT — ${new Date().toISOString()}, node ${process.version}, ${rounds} rounds (+1 warm-up) of ${flows} datagrams a sample, load ${load}`,
  );

  const lab = await PolicyLab.create({ bench: { team: 'bench' } }, [WEB]);
  const children: ChildProcess[] = [];
  try {
    const pod = lab.podNamespace(WEB.ref);
    await spawnFlood(pod, ['sink', '--port', String(CONTAINER_PORT)], children);
    const sender = await floodSender(
      lab.remote,
      {
        dev: 'eth0',
        src: UPLINK.remote4,
        count: flows,
        dstMac: await macOf(lab.node, 'uplink0'),
      },
      children,
    );
    const { build, send } = sender;
    for (const kind of KINDS) {
      await build(`node-${kind}`, `${UPLINK.node4} ${TARGET_HOST_PORT} ${kind}`);
      await build(`pod-${kind}`, `${POD4} ${CONTAINER_PORT} ${kind}`);
    }
    await build('nobody', `${UPLINK.node4} ${TARGET_HOST_PORT} new ${NOBODY_MAC}`);
    // The node's neighbour entry for the pod, so that no datagram waits for ARP.
    await lab.node.exec('ping', ['-c', '1', '-W', '1', POD4]);

    const sample = (name: string): Promise<Sample> =>
      floodSample(lab.node, { ns: pod, dev: 'eth0' }, () => send(name));

    let naive = false;
    const setNaive = async (on: boolean): Promise<void> => {
      if (on === naive) return;
      if (on) await lab.node.exec('nft', ['-f', '-'], { input: NAIVE_SCRIPT });
      else await lab.node.exec('nft', ['delete', 'table', 'ip', NAIVE_TABLE]);
      naive = on;
    };
    const configure = async (v: Variant): Promise<void> => {
      const hostPorts = v === 'b' ? ALL : v === 'c' ? [] : [mapping(TARGET_HOST_PORT)];
      await lab.applyTable([], { hostPorts: { [WEB.ref]: hostPorts } });
      await setNaive(v === 'c');
    };

    const results: Record<Variant, Record<Kind, Sample[]>> = {
      a: { new: [], one: [] },
      b: { new: [], one: [] },
      c: { new: [], one: [] },
      d: { new: [], one: [] },
    };
    const alone: number[] = [];
    for (let r = 0; r <= rounds; r++) {
      const order = r % 2 ? [...VARIANTS].reverse() : VARIANTS;
      for (const v of order) {
        await configure(v);
        for (const kind of KINDS) {
          const s = await sample(`${v === 'd' ? 'pod' : 'node'}-${kind}`);
          if (s.received < s.sent * 0.99)
            throw new Error(
              `${LABEL[v]}, ${kind}: the pod received ${s.received} of ${s.sent} datagrams`,
            );
          if (r > 0) results[v][kind].push(s);
        }
      }
      const { perFrame } = await send('nobody');
      if (r > 0) alone.push(1 / perFrame);
    }

    const rate = (v: Variant, k: Kind) => results[v][k].map((s) => s.rate);
    const ratio = (x: Variant, y: Variant, k: Kind) =>
      results[x][k].map((s, i) => s.rate / results[y][k][i]!.rate);
    for (const kind of KINDS) {
      console.log(
        kind === 'new'
          ? `\nnew flows (each datagram its own source port: a new conntrack entry, the nat chains walked)`
          : `\none flow (the same source port: the nat chains walked by the first datagram only)`,
      );
      console.log(
        '| variant | datagrams/s, median | min–max | µs a datagram | ratio to a, median | min–max | whole loop, received/s (median) | conntrack entries after a sample |',
      );
      console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
      for (const v of VARIANTS) {
        const rates = rate(v, kind);
        const ratios = ratio(v, 'a', kind);
        console.log(
          `| ${LABEL[v]} | ${kilo(med(rates))} | ${kilo(Math.min(...rates))}–${kilo(Math.max(...rates))} | ${(1e6 / med(rates)).toFixed(2)} | ×${med(ratios).toFixed(3)} | ${spread(ratios, 3)} | ${kilo(med(results[v][kind].map((s) => s.loopRate)))} | ${med(results[v][kind].map((s) => s.entries))} |`,
        );
      }
      const named: [string, number[]][] = [
        ['b/a (1,000 mappings in maps vs 1)', ratio('b', 'a', kind)],
        ['c/a (1,000 rules vs 1 mapping)', ratio('c', 'a', kind)],
        ['a/d (DNAT vs none)', ratio('a', 'd', kind)],
      ];
      console.log(
        named.map(([n, xs]) => `${n}: ×${med(xs).toFixed(3)} (${spread(xs, 3)})`).join('; '),
      );
    }
    const usNew = (v: Variant) => 1e6 / med(rate(v, 'new'));
    console.log(
      `\nsender alone (same frames, dropped on arrival at the node): ${kilo(med(alone))}/s median (${kilo(Math.min(...alone))}–${kilo(Math.max(...alone))}), ${(1e6 / med(alone)).toFixed(2)} µs a datagram`,
    );
    const path = (v: Variant) => usNew(v) - 1e6 / med(alone);
    console.log(
      `node + pod path per new flow (minus the sender alone): ${VARIANTS.map((v) => `${v} ${path(v).toFixed(2)} µs`).join(', ')}; b/a ×${(path('a') / path('b')).toFixed(3)}, c/a ×${(path('a') / path('c')).toFixed(3)}, a/d ×${(path('d') / path('a')).toFixed(3)} (as rates)`,
    );
    console.log(
      `per new flow, from the medians: DNAT (a − d) ${(usNew('a') - usNew('d')).toFixed(2)} µs; 999 more mappings in maps (b − a) ${(usNew('b') - usNew('a')).toFixed(2)} µs; as rules (c − a) ${(usNew('c') - usNew('a')).toFixed(2)} µs (${(((usNew('c') - usNew('a')) / (MAPPINGS - 1)) * 1000).toFixed(1)} ns a rule)`,
    );
  } finally {
    for (const child of children) child.kill('SIGKILL');
    await lab.destroy();
  }
}

await main();
