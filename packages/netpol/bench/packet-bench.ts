// Per-packet cost: two wired pods on a node namespace, measured with no flock table, with
// flock's table for a cluster without policies (anti-spoofing + conntrack only), and with the
// table of a 1,000-policy × 10,000-pod cluster in which the destination is isolated behind 20
// non-matching rules and the source is egress-isolated. Latency: `ping -f` round trips
// (conntrack fast path after the first packet). New connections: sequential TCP connects, each
// SYN walking the whole chain. Rounds alternate between the setups to cancel drift.
import type { Netns } from '@flock/testkit';
import { renderState } from '../src/index.js';
import type { StateInput } from '../src/state.js';
import { policy } from '../testing/builders.js';
import { PolicyLab, type Endpoint } from '../testing/lab.js';
import { syntheticState } from './generate.js';

const SRC: Endpoint = {
  ref: 'bench/src',
  kind: 'pod',
  local: true,
  ns: 'bench',
  pod: 'src',
  labels: { app: 'src' },
  v4: '10.250.0.1',
  v6: 'fd00:250::1',
};
const DST: Endpoint = {
  ref: 'bench/dst',
  kind: 'pod',
  local: true,
  ns: 'bench',
  pod: 'dst',
  labels: { app: 'dst' },
  v4: '10.250.0.2',
  v6: 'fd00:250::2',
};

const CONNECT_LOOP = `
const net = require('node:net');
const [host, count] = [process.argv[1], Number(process.argv[2])];
const one = () => new Promise((resolve, reject) => {
  const s = net.connect({ host, port: 80 });
  s.once('data', () => { s.destroy(); resolve(); });
  s.once('error', reject);
});
(async () => {
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < count; i++) await one();
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  process.stdout.write(String(count / s));
})();
`;

function benchPolicies(): unknown[] {
  const decoys = Array.from({ length: 20 }, (_, i) =>
    policy(`bench/aa-decoy-${String(i).padStart(2, '0')}`, {
      podSelector: { matchLabels: { app: 'dst' } },
      ingress: [
        {
          from: [
            {
              namespaceSelector: { matchLabels: { team: `t${i % 5}` } },
              podSelector: { matchLabels: { tier: 'web' } },
            },
          ],
          ports: [{ port: 20000 + i }],
        },
      ],
    }),
  );
  return [
    ...decoys,
    policy('bench/zz-allow-pods', {
      podSelector: { matchLabels: { app: 'dst' } },
      ingress: [{ from: [{ namespaceSelector: {} }] }],
    }),
    policy('bench/src-egress', {
      podSelector: { matchLabels: { app: 'src' } },
      policyTypes: ['Egress'],
      egress: [{ to: [{ namespaceSelector: {} }] }],
    }),
  ];
}

/** The synthetic cluster plus the two bench pods, as one state. */
function loadedState(lab: PolicyLab): StateInput {
  const big = syntheticState({ policies: 1000, pods: 10000 });
  const mine = lab.state(benchPolicies());
  return {
    namespaces: [
      ...(big.namespaces ?? []),
      { metadata: { name: 'bench', labels: { team: 't9' } } },
    ],
    pods: [...(big.pods ?? []), ...(mine.pods ?? [])],
    policies: [...(big.policies ?? []), ...(mine.policies ?? [])],
    local: [...(big.local ?? []), ...(mine.local ?? [])],
  };
}

const PINGS = 100_000;

/** Microseconds per ping-pong: total time of a flood ping (one echo in flight at a time). */
async function pingUs(ns: Netns, host: string): Promise<number> {
  const out = (
    await ns.exec('ping', ['-f', '-q', '-c', String(PINGS), host], { timeoutMs: 120_000 })
  ).stdout;
  const m = /(\d+) received.*time (\d+)ms/.exec(out);
  if (!m || Number(m[1]) !== PINGS) throw new Error(`lost pings or unreadable output: ${out}`);
  return (Number(m[2]) * 1000) / PINGS;
}

async function connectRate(ns: Netns, host: string): Promise<number> {
  return Number(
    (await ns.exec(process.execPath, ['-e', CONNECT_LOOP, host, '3000'], { timeoutMs: 120_000 }))
      .stdout,
  );
}

const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

export const SETUPS = ['none', 'empty', 'loaded'] as const;
export type Setup = (typeof SETUPS)[number];

export interface PacketFigures {
  /** Rules in the loaded table. */
  rules: number;
  /** µs per ping round trip, median over rounds. */
  pingUs: Record<Setup, number>;
  /** New TCP connections per second, median over rounds. */
  connects: Record<Setup, number>;
}

export async function packetFigures(rounds = 5): Promise<PacketFigures> {
  const lab = await PolicyLab.create({ bench: { team: 't9' } }, [SRC, DST]);
  try {
    const loaded = renderState(loadedState(lab));
    const empty = renderState(lab.state([]));
    const src = lab.podNamespace('bench/src');
    const ping: Record<Setup, number[]> = { none: [], empty: [], loaded: [] };
    const conn: Record<Setup, number[]> = { none: [], empty: [], loaded: [] };
    for (let r = 0; r < rounds; r++) {
      for (const setup of SETUPS) {
        if (setup === 'none') await lab.removeTable();
        else await lab.applier.apply(setup === 'empty' ? empty : loaded);
        ping[setup].push(await pingUs(src, DST.v4 as string));
        conn[setup].push(await connectRate(src, DST.v4 as string));
      }
    }
    await lab.applier.apply(loaded);
    const listing = (await lab.node.exec('nft', ['-a', 'list', 'table', 'inet', 'flock'])).stdout;
    return {
      rules: listing
        .split('\n')
        .filter((l) => /# handle/.test(l) && !/^\s*(table|chain|set|map)\b/.test(l)).length,
      pingUs: { none: med(ping.none), empty: med(ping.empty), loaded: med(ping.loaded) },
      connects: { none: med(conn.none), empty: med(conn.empty), loaded: med(conn.loaded) },
    };
  } finally {
    await lab.destroy();
  }
}
