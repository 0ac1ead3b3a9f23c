// The peer relay's memory at 150,000 pods (issue 40; sizes the chart's peerRelay.maxHeapMiB and
// memory limit): the operator's PeerRelay (from its build) in a child process with the chart's
// heap flag, reading PeerSlices from @flock/kube's FakeApiServer behind real HTTP (this process);
// then --changes record changes through slice updates (its log of changes for resuming agents,
// --max-log-events as the chart's maxLogEvents); then, for each K of --agents, K agents that ask
// for a snapshot at once over TLS with deflate, as agents do after a relay restart — a replica
// serves about peerRelay.autoscale.nodesPerReplica of them (200). The child reports its RSS and
// heap after a forced GC at each step, and its peak RSS (relay-memory-child.ts). Figures, not
// assertions.
//   ./dev npm run build && ./dev npx tsc -b packages/agent/tsconfig.testing.json &&
//   ./dev node packages/agent/dist/bench/fanout/relay-memory.js [--pods 150000 --changes 100000
//     --agents 50,200 --heap 384 --max-log-events 100000 --base DIR --step-timeout 600]
// --base DIR: another checkout (its operator built) measured after this build, in the same run.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { get } from 'node:https';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { createInflate } from 'node:zlib';
import { RELAY_PATH } from '@flock/api';
import { PEERSLICES } from '@flock/kube';
import { FakeApiServer, serveOverHttp } from '@flock/kube/testing';
import { selfSignedCertificate } from '@flock/testkit';
import { peerSlices } from '../policy/cluster-objects.js';
import { sampleLine, type Sample } from '../policy/memory-report.js';
import type { Ask } from './relay-memory-child.js';
import { operatorModule, PEER_RELAY_MODULE } from './publisher-module.js';

const { values } = parseArgs({
  strict: true,
  options: {
    pods: { type: 'string', default: '150000' },
    changes: { type: 'string', default: '100000' },
    agents: { type: 'string', default: '50,200' },
    heap: { type: 'string', default: '384' },
    'max-log-events': { type: 'string', default: '100000' },
    // Another checkout whose operator build (npm run build there) is measured after this one's.
    base: { type: 'string' },
    // A step of a relay that takes longer (a heap too small: collections without end) ends it.
    'step-timeout': { type: 'string', default: '600' },
  },
});
const count = (name: keyof typeof values) => {
  const n = Number(values[name]);
  if (!Number.isInteger(n) || n < 0)
    throw new Error(`--${name}: a whole number, not ${values[name]}`);
  return n;
};

/** Child → parent: listening (the relay's slices synced) or a memory sample. */
type Said = { port: number } | Sample;

const CHILD = join(import.meta.dirname, 'relay-memory-child.js');

/** One agent's snapshot: resolves when its `synced` line arrived (the stream stays open). */
function snapshot(port: number, ca: string): Promise<() => void> {
  return new Promise((resolve, reject) => {
    const req = get(
      {
        host: '127.0.0.1',
        port,
        path: RELAY_PATH,
        ca,
        headers: { authorization: 'Bearer bench', 'accept-encoding': 'deflate' },
      },
      (res) => {
        if (res.statusCode !== 200) return reject(new Error(`relay answered ${res.statusCode}`));
        let tail = '';
        let done = false;
        const body =
          res.headers['content-encoding'] === 'deflate' ? res.pipe(createInflate()) : res;
        body
          .setEncoding('utf8')
          .on('data', (text: string) => {
            if (done) return;
            tail = (tail + text).slice(-4096);
            if (tail.includes('{"t":"synced"')) {
              done = true;
              resolve(() => req.destroy());
            }
          })
          .on('error', reject);
      },
    );
    req.on('error', reject);
  });
}

async function parentSide(): Promise<void> {
  const pods = count('pods');
  const changes = count('changes');
  const agents = values.agents.split(',').map(Number);
  if (agents.some((k) => !Number.isInteger(k) || k < 1)) throw new Error('--agents: e.g. 50,200');
  const api = new FakeApiServer();
  api.register(PEERSLICES);
  const slices = peerSlices(pods);
  for (const slice of slices) api.putObject(PEERSLICES, slice);
  api.compact();
  console.log(
    `relay memory: ${pods.toLocaleString('en-US')} pods in ${slices.length.toLocaleString('en-US')} ` +
      `PeerSlices, ${changes.toLocaleString('en-US')} changes, agents ${agents.join(', ')}, ` +
      `log ${values['max-log-events']} events; ${cpus().length} CPUs, load ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`,
  );
  const front = await serveOverHttp(api);
  const dir = await mkdtemp(join(tmpdir(), 'flock-relay-memory-'));
  try {
    const tls = await selfSignedCertificate(dir, 'relay', {
      subject: '/CN=flock-bench-relay',
      san: 'IP:127.0.0.1',
    });
    const ca = await readFile(tls.cert, 'utf8');
    const flags = [`--max-old-space-size=${count('heap')}`, '--expose-gc'];
    console.log(
      `child: node ${flags.join(' ')} (the chart's NODE_OPTIONS; peerRelay.maxHeapMiB: 384)`,
    );
    const relays: [string, string][] = [['this build', await operatorModule(PEER_RELAY_MODULE)]];
    if (values.base) relays.push([`base ${values.base}`, baseModule(values.base)]);
    for (const [label, module] of relays) {
      console.log(`${label}:`);
      await measure({ module, flags, url: front.url, tls, ca, slices, api, changes, agents }).catch(
        (error: unknown) => console.log(`  ${label}: ${String(error)}`),
      );
    }
  } finally {
    await front.close();
    await rm(dir, { recursive: true, force: true });
  }
}

/** The relay module of another checkout's operator build. */
function baseModule(dir: string): string {
  const file = join(resolve(dir), 'packages/operator/dist/src', PEER_RELAY_MODULE);
  if (!existsSync(file)) throw new Error(`${file} is missing: npm run build in ${dir}`);
  return file;
}

/** Changes made so far (a second relay's changes go on from there: no write is a no-op). */
let round = 0;

interface Measure {
  module: string;
  flags: string[];
  url: string;
  tls: { cert: string; key: string };
  ca: string;
  slices: ReturnType<typeof peerSlices>;
  api: FakeApiServer;
  changes: number;
  agents: number[];
}

/** One relay in a child: synced, `changes` changes, then K agents' snapshots for each K. */
async function measure(m: Measure): Promise<void> {
  const child = spawn(
    process.execPath,
    [
      ...m.flags,
      ...[CHILD, m.module, m.url, m.tls.cert, m.tls.key],
      String(count('max-log-events')),
    ],
    { stdio: ['pipe', 'pipe', 'inherit'], env: { ...process.env, NODE_OPTIONS: '' } },
  );
  const exited = new Promise<number | null>((r) => child.once('exit', r));
  const said: Said[] = [];
  let heard: () => void = () => undefined;
  createInterface({ input: child.stdout }).on('line', (line) => {
    const s = JSON.parse(line) as Said;
    if ('step' in s) console.log(sampleLine(s));
    said.push(s);
    heard();
  });
  const limit = count('step-timeout') * 1000;
  const next = async <T extends Said>(is: (s: Said) => s is T): Promise<T> => {
    const t0 = performance.now();
    for (;;) {
      const found = said.find(is);
      if (found) {
        said.splice(said.indexOf(found), 1);
        return found;
      }
      const left = limit - (performance.now() - t0);
      if (left <= 0) throw new Error(`no answer in ${limit / 1000} s`);
      const waiting = new Promise<void>((r) => {
        heard = r;
        setTimeout(r, left).unref();
      });
      await Promise.race([waiting, exited]);
      if (child.exitCode !== null) throw new Error(`the relay exited (${child.exitCode})`);
    }
  };
  const isSample = (s: Said): s is Sample => 'step' in s;
  const ask = async (step: string, changes: number) => {
    child.stdin.write(`${JSON.stringify({ step, changes } satisfies Ask)}\n`);
    return next(isSample);
  };
  try {
    const { port } = await next((s): s is { port: number } => 'port' in s);
    // Changes: every record of a slice relabelled, slice after slice, each slice put whole as
    // the publisher writes it (20 changes each).
    let made = 0;
    while (made < m.changes) {
      round++;
      for (const slice of m.slices) {
        if (made >= m.changes) break;
        const records = slice.spec.pods.slice(0, m.changes - made);
        for (const p of records) p.labels = { ...p.labels, 'bench-round': String(round) };
        m.api.putObject(PEERSLICES, slice);
        made += records.length;
        // A pause every 2,000 changes: the relay reads them as they come, not all at the end.
        if (made % 2_000 < records.length) await new Promise((r) => setTimeout(r, 20));
      }
    }
    await ask(`+ ${m.changes.toLocaleString('en-US')} changes logged`, m.changes);
    for (const k of m.agents) {
      const t0 = performance.now();
      const streams = await Promise.all(Array.from({ length: k }, () => snapshot(port, m.ca)));
      const seconds = (performance.now() - t0) / 1000;
      await ask(`+ ${k} agents streaming (snapshots ${seconds.toFixed(1)} s)`, m.changes);
      for (const close of streams) close();
    }
    child.stdin.end();
    const code = await exited;
    if (code !== 0) throw new Error(`the relay exited ${code}`);
  } finally {
    child.kill('SIGKILL');
  }
}

await parentSide();
