// The fan-out benchmark's output: markdown tables of the rounds (docs/benchmarks.md takes them
// as they are) and the cost model, extrapolated with its formula written beside the figures.
// A design with a peer relay has its relay's CPU beside the API server's ("—" without one).
import { designNamed } from './designs.js';
import type { Round } from './measure.js';

const MiB = 1024 * 1024;
const f = (n: number, digits = 1) =>
  Number.isFinite(n)
    ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })
    : '—';
const row = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`;
const rule = (n: number) => `| --- |${' ---: |'.repeat(n - 1)}`;
const watches = (byWatch: Record<string, number>, digits: number, all = true) =>
  Object.entries(byWatch)
    .filter(([, n]) => all || n > 0)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([watch, n]) => `${watch} ${f(n, digits)}`)
    .join(', ');

export function syncTable(rounds: readonly Round[]): string {
  const head = [
    'design',
    'agents',
    'all synced, s',
    'API CPU, s',
    'API CPU / agent, s',
    'API RSS, MiB',
    'relay CPU, s',
    'received / agent, MB',
    'agent CPU, s',
    'objects / agent',
  ];
  const lines = rounds.flatMap(({ design, agents, sync: s }) =>
    s
      ? [
          row([
            design,
            agents,
            f(s.seconds),
            f(s.apiCpu, 2),
            f(s.apiCpu / agents, 3),
            f(s.apiRss / MiB, 0),
            f(s.relayCpu ?? NaN, 2),
            f(s.bytesPerAgent / 1e6, 2),
            f(s.agentCpuSeconds, 2),
            f(
              Object.values(s.listedPerAgent).reduce((a, b) => a + b, 0),
              0,
            ),
          ]),
        ]
      : [],
  );
  return [
    '\n### Initial sync: K watchers started together\n',
    row(head),
    rule(head.length),
    ...lines,
  ].join('\n');
}

export function churnTable(rounds: readonly Round[]): string {
  const base = rounds.find((r) => r.agents === 0)?.churn.apiCpuPerSecond ?? 0;
  const head = [
    'design',
    'agents',
    'writes/s',
    'API CPU, s/s',
    'API RSS, MiB',
    'relay CPU, s/s',
    'events / agent / s',
    'KB / agent / s',
    'agent CPU, ms/s',
    'lag to last agent p50 / p99 / max, ms',
    'missed',
    're-watches',
    'API CPU / event, µs',
    'bytes / event',
  ];
  const lines = rounds.map(({ design, agents, churn: c }) => {
    const perEvent = c.events ? ((c.apiCpuPerSecond - base) * c.seconds * 1e6) / c.events : NaN;
    return row([
      design,
      agents,
      f(c.writesPerSecond),
      f(c.apiCpuPerSecond, 3),
      f(c.apiRss / MiB, 0),
      f(c.relayCpuPerSecond ?? NaN, 3),
      f(c.eventsPerAgentPerSecond, 2),
      f(c.bytesPerAgentPerSecond / 1e3),
      f(c.agentCpuPerSecond * 1000),
      agents ? `${f(c.lastSeen.p50)} / ${f(c.lastSeen.p99)} / ${f(c.lastSeen.max)}` : '—',
      agents ? c.missed : '—',
      agents ? Math.round(c.rewatches) : '—',
      f(perEvent),
      agents ? f(c.bytesPerEvent, 0) : '—',
    ]);
  });
  return [
    '\n### Churn: pod status and label writes (API CPU / event: over the no-watcher row, per delivered event, meaningful once K × writes/s is in the thousands; bytes: rchar of the watchers; with a relay, events are its put/del lines)\n',
    row(head),
    rule(head.length),
    ...lines,
  ].join('\n');
}

/** What each watch received: objects at the sync, events per second of churn, per agent. */
export function byWatch(rounds: readonly Round[]): string {
  return rounds
    .filter((r) => r.agents > 0)
    .map(
      (r) =>
        `  ${r.design}, ${r.agents} agents — per agent: sync ${watches(r.sync?.listedPerAgent ?? {}, 0)}\n` +
        `    churn, events/s (the others none): ${watches(r.churn.eventsByWatch, 2, false)}` +
        (r.churn.relayLineBytes === undefined
          ? ''
          : `; relay stream ${f(r.churn.relayLineBytes, 0)} B a put/del (its lines uncompressed, ticks included; the wire's bytes are rchar's)`),
    )
    .join('\n');
}

/** Least squares y = a + b·x; b alone when fewer than two distinct x. */
function slope(points: readonly [number, number][]): number {
  const n = points.length;
  const mx = points.reduce((a, [x]) => a + x, 0) / n;
  const my = points.reduce((a, [, y]) => a + y, 0) / n;
  const sxx = points.reduce((a, [x]) => a + (x - mx) ** 2, 0);
  const sxy = points.reduce((a, [x, y]) => a + (x - mx) * (y - my), 0);
  return sxx > 0 ? sxy / sxx : NaN;
}

/** Agents a relay replica serves in the model (the relays of `at.nodes` agents). */
export const AGENTS_PER_RELAY = 250;

/**
 * The model of each design: events per agent per write, and the API server's CPU per delivered
 * event fitted over its rounds and the no-watcher one (CPU/s against events/s: the writes' own
 * cost is the intercept); bytes per event from its largest round. Extrapolated to `at`. A design
 * with a relay: the agents' events come from relays, one per AGENTS_PER_RELAY agents, each
 * watching the slices as a peer-slices agent does (slice events per write from that arm's
 * round with the most of them); the relay's CPU per delivery fitted over its rounds as well.
 */
export function model(
  rounds: readonly Round[],
  at = { nodes: 5_000, pods: 150_000, changing: 0.001 },
): string {
  const none = rounds.filter((r) => r.agents === 0);
  const designs = [...new Set(rounds.filter((r) => r.agents > 0).map((r) => r.design))];
  const writes = at.pods * at.changing;
  const n = (x: number) => x.toLocaleString('en-US');
  // Slice events per pod write, as an agent watching every PeerSlice receives them.
  const sliceRates = rounds
    .filter((x) => x.agents > 0 && !designNamed(x.design).relay)
    .map((x) => (x.churn.eventsByWatch['peerslices'] ?? 0) / x.churn.writesPerSecond);
  const slicesPerWrite = Math.max(...sliceRates, 0) || NaN;
  return designs
    .map((design) => {
      const mine = rounds.filter((x) => x.design === design);
      const r = mine.at(-1) as Round;
      const c = r.churn;
      const perWrite = c.eventsPerAgentPerSecond / c.writesPerSecond;
      const perSecond = at.nodes * perWrite * writes;
      const scale =
        `  at ${n(at.nodes)} nodes, ${n(at.pods)} pods, ${at.changing * 100}% changing/s (${f(writes, 0)} writes/s): ` +
        `${n(at.nodes)} × ${f(perWrite, 2)} × ${f(writes, 0)} = ${f(perSecond, 0)} events/s`;
      const bytes = `× ${f(c.bytesPerEvent, 0)} B = ${f((perSecond * c.bytesPerEvent) / 1e9, 2)} GB/s to the agents`;
      if (designNamed(design).relay) {
        const relayPoints = mine.map((x): [number, number] => [
          x.churn.events / x.churn.seconds,
          x.churn.relayCpuPerSecond ?? NaN,
        ]);
        const relayUs = (mine.length > 1 ? slope(relayPoints) : NaN) * 1e6;
        const averageUs = (((c.relayCpuPerSecond ?? NaN) * c.seconds) / c.events) * 1e6;
        const relays = Math.ceil(at.nodes / AGENTS_PER_RELAY);
        const apiDeliveries = relays * slicesPerWrite * writes;
        return (
          `model (${design}): events/s = agents × ${f(perWrite, 2)} × pod writes/s (${r.agents} agents), from relays; ` +
          `relay CPU = events/s × ${f(relayUs)} µs (fitted over ${mine.map((x) => x.agents).join(', ')} agents; ` +
          `${f(averageUs)} µs on average at ${r.agents}); bytes/s = events/s × ${f(c.bytesPerEvent, 0)} B; ` +
          `the API server delivers slice events to the relays alone.\n` +
          `${scale}; × ${f(relayUs)} µs = ${f((perSecond * relayUs) / 1e6)} relay cores ` +
          `(${f((perSecond * averageUs) / 1e6)} at the average) over ${relays} relays (${AGENTS_PER_RELAY} agents each); ${bytes}; ` +
          `API server: ${relays} relays × ${f(slicesPerWrite, 2)} slice events a write × ${f(writes, 0)} = ` +
          `${f(apiDeliveries, 0)} deliveries/s`
        );
      }
      const points = [...none, ...mine].map((x): [number, number] => [
        x.churn.events / x.churn.seconds,
        x.churn.apiCpuPerSecond,
      ]);
      const us = slope(points) * 1e6;
      return (
        `model (${design}): events/s = agents × ${f(perWrite, 2)} × pod writes/s (${r.agents} agents); ` +
        `API CPU = events/s × ${f(us)} µs (fitted over ${[...none, ...mine].map((x) => x.agents).join(', ')} agents); ` +
        `bytes/s = events/s × ${f(c.bytesPerEvent, 0)} B.\n` +
        `${scale}; × ${f(us)} µs = ${f((perSecond * us) / 1e6)} API-server cores; ${bytes}`
      );
    })
    .join('\n');
}
