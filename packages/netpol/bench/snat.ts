// `node dist/bench/snat.js [--rounds N] [--flows N]` (root; python3, conntrack, nft): what private
// IPv4's SNAT costs a packet, figures for docs/benchmarks.md. In a PolicyLab (the node namespace
// with flock's real table, one pod, the "remote" namespace outside the node), a sender in the pod
// writes IPv4 UDP datagrams to the remote's address (hostport-flood.py), through the node:
//   new flows: N datagrams, each from its own source port: a new conntrack entry each, so each
//     walks the nat chains (and, translated, gets a port of its own);
//   one flow:  N datagrams of one flow: the first walks the nat chains, the others are
//     rewritten from their conntrack entry — the per-packet cost of an established flow.
// Variants, interleaved in every round (order reversed every other round):
//   a  routed: flock's table without SNAT (a public pod);
//   b  SNAT: the same table with the pod's slice translated beyond the cluster's range.
// A veth hands a frame to its peer in the sender's own system call, so the send loop's time is
// the whole path's (flood.ts). A sample where the remote received fewer than 99 % of the
// datagrams stops the bench. Not a test.
import type { ChildProcess } from 'node:child_process';
import { run } from '@flock/exec';
import type { SnatOptions } from '../src/render-snat.js';
import { PolicyLab, UPLINK, type Endpoint } from '../testing/lab.js';
import {
  floodSample,
  floodSender,
  kilo,
  med,
  option,
  spawnFlood,
  spread,
  type FloodKind,
  type Sample,
} from './flood.js';

const POD: Endpoint = {
  ref: 'bench/client',
  kind: 'pod',
  local: true,
  ns: 'bench',
  pod: 'client',
  labels: { app: 'client' },
  v4: '10.250.0.2',
  v6: 'fd00:250::2',
};
const SINK_PORT = 9;
const SNAT: SnatOptions = { sources: ['10.250.0.0/24'], keep: ['10.250.0.0/16'] };

const VARIANTS = ['a', 'b'] as const;
type Variant = (typeof VARIANTS)[number];
const KINDS: readonly FloodKind[] = ['new', 'one'];
const LABEL: Record<Variant, string> = {
  a: 'a: routed (no SNAT)',
  b: "b: SNAT to the node's address",
};

/** The MAC the pod sends its packets to: its gateway's permanent neighbour entry. */
async function gatewayMac(lab: PolicyLab): Promise<string> {
  const { stdout } = await lab
    .podNamespace(POD.ref)
    .exec('ip', ['-j', 'neigh', 'show', 'dev', 'eth0', '169.254.1.1']);
  const mac = (JSON.parse(stdout) as { lladdr?: string }[])[0]?.lladdr;
  if (!mac) throw new Error('the pod has no neighbour entry for its gateway 169.254.1.1');
  return mac;
}

/** Conntrack entries of the node whose source was translated. */
async function snatted(lab: PolicyLab): Promise<number> {
  const { stdout } = await lab.node.exec('conntrack', ['-L', '-p', 'udp', '--src-nat'], {
    okCodes: [0, 1],
  });
  return stdout.split('\n').filter((l) => l.startsWith('udp')).length;
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('snat: run as root (namespaces, nft)');
  const rounds = option('--rounds', 10);
  const flows = option('--flows', 50_000);
  if (!(flows > 0 && flows <= 64_000)) throw new Error('--flows: 1 to 64,000 (source ports)');
  const load = (await run('cat', ['/proc/loadavg'])).stdout.split(' ').slice(0, 3).join(' ');
  console.log(
    `# private IPv4 SNAT — ${new Date().toISOString()}, node ${process.version}, ${rounds} rounds (+1 warm-up) of ${flows} datagrams a sample, load ${load}`,
  );
  const lab = await PolicyLab.create({ bench: { team: 'bench' } }, [POD]);
  const children: ChildProcess[] = [];
  try {
    await spawnFlood(lab.remote, ['sink', '--port', String(SINK_PORT)], children);
    const sender = await floodSender(
      lab.podNamespace(POD.ref),
      { dev: 'eth0', src: POD.v4!, count: flows, dstMac: await gatewayMac(lab) },
      children,
    );
    for (const kind of KINDS) await sender.build(kind, `${UPLINK.remote4} ${SINK_PORT} ${kind}`);
    // The node's neighbour entry for the remote, so that no datagram waits for ARP.
    await lab.node.exec('ping', ['-c', '1', '-W', '1', UPLINK.remote4]);

    const results: Record<Variant, Record<FloodKind, Sample[]>> = {
      a: { new: [], one: [] },
      b: { new: [], one: [] },
    };
    for (let r = 0; r <= rounds; r++) {
      for (const v of r % 2 ? [...VARIANTS].reverse() : VARIANTS) {
        await lab.applyTable([], v === 'b' ? { render: { snat: SNAT } } : {});
        for (const kind of KINDS) {
          const s = await floodSample(lab.node, { ns: lab.remote, dev: 'eth0' }, () =>
            sender.send(kind),
          );
          if (s.received < s.sent * 0.99)
            throw new Error(`${LABEL[v]}, ${kind}: the remote received ${s.received} of ${s.sent}`);
          // What the sample measured is what it says: every flow translated in b, none in a.
          const translated = await snatted(lab);
          if (translated !== (v === 'b' ? s.entries : 0))
            throw new Error(`${LABEL[v]}, ${kind}: ${translated} of ${s.entries} flows translated`);
          if (r > 0) results[v][kind].push(s);
        }
      }
    }

    for (const kind of KINDS) {
      console.log(
        kind === 'new'
          ? '\nnew flows (each datagram its own source port: a new conntrack entry, the nat chains walked)'
          : '\none flow (the same source port: translated from its conntrack entry after the first)',
      );
      console.log(
        '| variant | datagrams/s, median | min–max | µs a datagram | ratio to a, median | min–max | whole loop, received/s (median) | conntrack entries after a sample |',
      );
      console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
      for (const v of VARIANTS) {
        const rates = results[v][kind].map((s) => s.rate);
        const ratios = results[v][kind].map((s, i) => s.rate / results.a[kind][i]!.rate);
        console.log(
          `| ${LABEL[v]} | ${kilo(med(rates))} | ${kilo(Math.min(...rates))}–${kilo(Math.max(...rates))} | ${(1e6 / med(rates)).toFixed(2)} | ×${med(ratios).toFixed(3)} | ${spread(ratios, 3)} | ${kilo(med(results[v][kind].map((s) => s.loopRate)))} | ${med(results[v][kind].map((s) => s.entries))} |`,
        );
      }
      const us = (v: Variant) => 1e6 / med(results[v][kind].map((s) => s.rate));
      console.log(`SNAT (b − a): ${(us('b') - us('a')).toFixed(2)} µs a datagram`);
    }
  } finally {
    for (const child of children) child.kill('SIGKILL');
    await lab.destroy();
  }
}

await main();
