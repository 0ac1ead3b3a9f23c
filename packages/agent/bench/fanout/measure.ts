// One round of the fan-out benchmark: K watchers of a design started together on the cluster
// (the initial sync), then the churn; what it cost the API server, what each watcher received,
// and how long each write took to reach the last watcher. Also the churn with no watcher: what
// the writes alone cost the API server (the baseline the per-event cost is taken over). With a
// peer relay (the `peer-relay` arm) its process's CPU is measured beside the API server's.
import { summarize, type Summary } from '@flock/testkit';
import type { KubeTransport } from '@flock/kube';
import { churn, type ChurnPlan, type ChurnResult } from './churn.js';
import type { WatchCounts } from './counting-transport.js';
import { RELAY_WATCH } from './counting-relay.js';
import type { PodRef } from './populate.js';
import { cpuSeconds, rssBytes } from './proc.js';
import type { Report } from './protocol.js';
import { designNamed, type Design, type RelayFiles } from './designs.js';
import { Watchers } from './watchers.js';

export interface Setting {
  api: KubeTransport;
  apiserverPid: number;
  kubeconfig: string;
  pods: readonly PodRef[];
  churn: Omit<ChurnPlan, 'firstWrite'>;
  /** The peer relay of a design that has one: its process and what watchers need to reach it. */
  relay?: { pid: number; files: RelayFiles };
  /** Kill the relay `atMs` into each churn and start another (its CPU is then not counted). */
  relayCrash?: { atMs: number; crash: () => Promise<void> };
}

export interface Sync {
  seconds: number;
  apiCpu: number;
  apiRss: number;
  /** The relay process's CPU (a design with a relay). */
  relayCpu?: number;
  /** Averages over the watchers. */
  bytesPerAgent: number;
  agentCpuSeconds: number;
  listedPerAgent: Record<string, number>;
}

export interface Churn {
  seconds: number;
  writesPerSecond: number;
  apiCpuPerSecond: number;
  apiRss: number;
  relayCpuPerSecond?: number;
  /** Events (added, modified, deleted) over every watch, all watchers. */
  events: number;
  eventsPerAgentPerSecond: number;
  bytesPerAgentPerSecond: number;
  bytesPerEvent: number;
  /** Per watcher and second, by watch. */
  eventsByWatch: Record<string, number>;
  /** The relay stream's bytes per put/del line, uncompressed (a design with a relay). */
  relayLineBytes?: number;
  agentCpuPerSecond: number;
  /** Watches opened again during the churn, all watchers (a watcher too slow for its server). */
  rewatches: number;
  /** Ms from each write to the last watcher seeing it; writes some watcher never saw: missed. */
  lastSeen: Summary;
  missed: number;
}

export interface Round {
  design: string;
  agents: number;
  sync?: Sync;
  churn: Churn;
}

/** How long after the churn the watchers may take to see its last writes. */
const LATE_MS = 15_000;
/** A pause between the sync and the churn, so that neither's tail is counted in the other. */
const QUIET_MS = 3_000;

let nextWrite = 0;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);
const avg = (xs: readonly number[]) => (xs.length ? sum(xs) / xs.length : 0);
const events = (c: WatchCounts) => c.added + c.modified + c.deleted;
const cpuDeltas = (from: Report[], to: Report[]) =>
  to.map((r, i) => r.cpuMs - (from[i]?.cpuMs ?? 0));

/** Per watch: the total over `reports` of `pick`, minus that of `before`, per watcher. */
function byWatch(reports: Report[], pick: (c: WatchCounts) => number, before?: Report[]) {
  const out: Record<string, number> = {};
  const add = (rs: Report[] | undefined, sign: number) => {
    for (const r of rs ?? [])
      for (const [watch, c] of Object.entries(r.counts))
        out[watch] = (out[watch] ?? 0) + (sign * pick(c)) / reports.length;
  };
  add(reports, 1);
  add(before, -1);
  return out;
}

/** The relay's CPU seconds so far (none without a relay). */
const relayCpu = (s: Setting) => (s.relay ? cpuSeconds(s.relay.pid) : Promise.resolve(NaN));

async function runChurn(s: Setting): Promise<ChurnResult & { apiCpu: number; relayCpu: number }> {
  const [cpu0, relay0] = [await cpuSeconds(s.apiserverPid), await relayCpu(s)];
  const crashed =
    s.relay && s.relayCrash ? sleep(s.relayCrash.atMs).then(s.relayCrash.crash) : undefined;
  const result = await churn(s.api, s.pods, { ...s.churn, firstWrite: nextWrite });
  nextWrite = result.to;
  await crashed;
  return {
    ...result,
    apiCpu: (await cpuSeconds(s.apiserverPid)) - cpu0,
    // Two processes when the relay was killed: the first one's last CPU is gone with it.
    relayCpu: crashed !== undefined ? NaN : (await relayCpu(s)) - relay0,
  };
}

/** After the cluster was written: the API server is still busy with it for a few seconds. */
const SETTLE_MS = 10_000;

/** The churn alone: what the writes cost the API server with nobody watching pods. */
export async function baseline(s: Setting): Promise<Round> {
  await sleep(SETTLE_MS);
  const r = await runChurn(s);
  const writes = r.to - r.from - r.failed.size;
  return {
    design: '(no watcher)',
    agents: 0,
    churn: {
      seconds: r.seconds,
      writesPerSecond: writes / r.seconds,
      apiCpuPerSecond: r.apiCpu / r.seconds,
      apiRss: await rssBytes(s.apiserverPid),
      events: 0,
      eventsPerAgentPerSecond: 0,
      bytesPerAgentPerSecond: 0,
      bytesPerEvent: 0,
      eventsByWatch: {},
      agentCpuPerSecond: 0,
      rewatches: 0,
      lastSeen: summarize([]),
      missed: 0,
    },
  };
}

/**
 * Wait until every write in [from, to) not failed that the design delivers (all, or the label
 * changes: odd numbers, churn.ts) was seen by all k watchers (or LATE_MS).
 */
async function lastSeen(
  w: Watchers,
  first: Report[],
  r: ChurnResult,
  k: number,
  sees: Design['sees'],
) {
  const delivered = (n: number) => sees === 'all' || n % 2 === 1;
  const seen = new Map<number, { by: number; ms: number }>();
  const take = (reports: Report[]) => {
    for (const report of reports)
      for (const [n, ms] of report.lags) {
        if (n < r.from || n >= r.to || !delivered(n)) continue;
        const s = seen.get(n) ?? { by: 0, ms: 0 };
        seen.set(n, { by: s.by + 1, ms: Math.max(s.ms, ms) });
      }
  };
  let expected = 0;
  for (let n = r.from; n < r.to; n++) if (delivered(n) && !r.failed.has(n)) expected++;
  const complete = () => [...seen.values()].filter((s) => s.by === k).length >= expected;
  take(first);
  for (const deadline = Date.now() + LATE_MS; !complete() && Date.now() < deadline;) {
    await sleep(500);
    take(await w.reports());
  }
  const all = [...seen.values()].filter((s) => s.by === k).map((s) => s.ms);
  return { lastSeen: summarize(all), missed: expected - all.length };
}

/**
 * Said when agents of a relay design listed or watched the PeerSlices: they fell back to them
 * (slice-peers.ts: no relay state in time), so the API server served them slices too (until the
 * relay's snapshot was complete: a list cut short counts its pages, with no watch).
 */
function fellBack(reports: Report[], k: number, when: string): void {
  const slices = reports.map((r) => r.counts['peerslices']).filter((c) => c !== undefined);
  const fell = slices.filter((c) => c.listed + c.watches > 0);
  if (fell.length > 0)
    console.log(
      `  ${when}, ${fell.length} of ${k} agents had fallen back to the PeerSlices: ` +
        `${sum(fell.map((c) => c.listed))} slices listed`,
    );
}

/** The API server's (and relay's) CPU, and what each watcher has read and received, now. */
async function snapshot(s: Setting, w: Watchers) {
  return {
    cpu: await cpuSeconds(s.apiserverPid),
    relayCpu: await relayCpu(s),
    bytes: await w.bytesRead(),
    reports: await w.reports(),
  };
}

export async function round(s: Setting, design: string, k: number): Promise<Round> {
  const arm = designNamed(design);
  if (arm.relay && !s.relay) throw new Error(`${design} needs a peer relay (run.ts starts it)`);
  const args = s.relay
    ? ['--relay-ca', s.relay.files.caFile, '--relay-token', s.relay.files.tokenFile]
    : [];
  const w = await Watchers.spawn(k, design, s.kubeconfig, args);
  try {
    const loaded = await snapshot(s, w);
    const syncMs = await w.start();
    const synced = await snapshot(s, w);
    const sync: Sync = {
      seconds: syncMs / 1000,
      apiCpu: synced.cpu - loaded.cpu,
      apiRss: await rssBytes(s.apiserverPid),
      ...(s.relay ? { relayCpu: synced.relayCpu - loaded.relayCpu } : {}),
      bytesPerAgent: avg(synced.bytes.map((b, i) => b - (loaded.bytes[i] ?? 0))),
      agentCpuSeconds: avg(cpuDeltas(loaded.reports, synced.reports)) / 1000,
      listedPerAgent: byWatch(synced.reports, (c) => c.listed + events(c)),
    };
    if (arm.relay) fellBack(synced.reports, k, 'by the sync');
    await sleep(QUIET_MS);
    const start = await snapshot(s, w);
    const r = await runChurn(s);
    const end = await snapshot(s, w);
    if (arm.relay) fellBack(end.reports, k, "by the churn's end");
    const received = sum(end.bytes.map((b, i) => b - (start.bytes[i] ?? 0)));
    const perWatch = byWatch(end.reports, events, start.reports);
    const relayBytes = byWatch(end.reports, (c) => c.bytes ?? 0, start.reports)[RELAY_WATCH];
    const total = sum(Object.values(perWatch)) * k;
    const writes = r.to - r.from - r.failed.size;
    return {
      design,
      agents: k,
      sync,
      churn: {
        seconds: r.seconds,
        writesPerSecond: writes / r.seconds,
        apiCpuPerSecond: r.apiCpu / r.seconds,
        apiRss: await rssBytes(s.apiserverPid),
        ...(s.relay ? { relayCpuPerSecond: r.relayCpu / r.seconds } : {}),
        events: total,
        eventsPerAgentPerSecond: total / k / r.seconds,
        bytesPerAgentPerSecond: received / k / r.seconds,
        bytesPerEvent: total ? received / total : 0,
        eventsByWatch: Object.fromEntries(
          Object.entries(perWatch).map(([watch, n]) => [watch, n / r.seconds]),
        ),
        ...(arm.relay && relayBytes !== undefined
          ? { relayLineBytes: relayBytes / (perWatch[RELAY_WATCH] ?? NaN) }
          : {}),
        rewatches: sum(Object.values(byWatch(end.reports, (c) => c.watches, start.reports))) * k,
        agentCpuPerSecond: avg(cpuDeltas(start.reports, end.reports)) / 1000 / r.seconds,
        ...(await lastSeen(w, end.reports, r, k, arm.sees)),
      },
    };
  } finally {
    await w.stop();
  }
}
