// The fan-out benchmark's command line (run.ts says what each figure means).
import { parseArgs } from 'node:util';
import { DESIGNS } from './designs.js';

export interface FanoutOptions {
  nodes: number;
  podsPerNode: number;
  namespaces: number;
  policiesPerNamespace: number;
  /** Watcher processes per round, run one size after another on the same objects. */
  agents: number[];
  churnSeconds: number;
  /** Pod writes per second during churn. */
  rate: number;
  /** Install the ClusterNetworkPolicy CRD: agents then also watch every Node. */
  cnp: boolean;
  /** Design arms to run, side by side (designs.ts). */
  designs: string[];
  /** Concurrent API requests while creating the objects and during churn. */
  concurrency: number;
  /** The publisher's namespaces written in parallel (absent: its default). */
  publisherWorkers?: number;
  /** Seconds into each churn at which the relay is killed (SIGKILL) and a new one started. */
  killRelayAt?: number;
}

const USAGE = `usage: node dist/bench/fanout/run.js [--nodes 1000] [--pods-per-node 30]
  [--namespaces 100] [--policies-per-namespace 1] [--agents 10,50,100] [--churn-seconds 60]
  [--rate PODS_PER_S (default 0.1% of pods, at least 1)] [--cnp on|off] [--designs pods,peer-slices]
  [--concurrency 32] [--publisher-workers N] [--kill-relay-at SECONDS_INTO_THE_CHURN]`;

const count = (name: string, text: string, min: number): number => {
  const n = Number(text);
  if (!Number.isInteger(n) || n < min)
    throw new Error(`--${name}: an integer ≥ ${min}, got ${text}\n${USAGE}`);
  return n;
};

export function parseOptions(argv: string[]): FanoutOptions {
  if (argv.includes('--help')) {
    console.log(`${USAGE}\n  designs: ${[...DESIGNS.keys()].join(', ')}`);
    process.exit(0);
  }
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      nodes: { type: 'string', default: '1000' },
      'pods-per-node': { type: 'string', default: '30' },
      namespaces: { type: 'string', default: '100' },
      'policies-per-namespace': { type: 'string', default: '1' },
      agents: { type: 'string', default: '10,50,100' },
      'churn-seconds': { type: 'string', default: '60' },
      rate: { type: 'string' },
      cnp: { type: 'string', default: 'on' },
      designs: { type: 'string', default: 'pods,peer-slices' },
      concurrency: { type: 'string', default: '32' },
      'publisher-workers': { type: 'string' },
      'kill-relay-at': { type: 'string' },
    },
  });
  if (values.cnp !== 'on' && values.cnp !== 'off') throw new Error(`--cnp: on or off\n${USAGE}`);
  const nodes = count('nodes', values.nodes, 1);
  const podsPerNode = count('pods-per-node', values['pods-per-node'], 0);
  const rate =
    values.rate === undefined
      ? Math.max(1, Math.round(nodes * podsPerNode * 0.001))
      : Number(values.rate);
  if (!(rate > 0)) throw new Error(`--rate: a positive number, got ${values.rate}\n${USAGE}`);
  return {
    nodes,
    podsPerNode,
    namespaces: count('namespaces', values.namespaces, 1),
    policiesPerNamespace: count('policies-per-namespace', values['policies-per-namespace'], 0),
    agents: values.agents.split(',').map((k) => count('agents', k, 1)),
    churnSeconds: count('churn-seconds', values['churn-seconds'], 1),
    rate,
    cnp: values.cnp === 'on',
    designs: values.designs.split(','),
    concurrency: count('concurrency', values.concurrency, 1),
    ...(values['publisher-workers'] === undefined
      ? {}
      : { publisherWorkers: count('publisher-workers', values['publisher-workers'], 1) }),
    ...(values['kill-relay-at'] === undefined
      ? {}
      : { killRelayAt: count('kill-relay-at', values['kill-relay-at'], 0) }),
  };
}
