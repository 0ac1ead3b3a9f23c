// The relay side of relay-memory.ts: the operator's PeerRelay alone in this process, loaded from
// the module path the parent gives, importing nothing else of the benches' (the process whose
// memory is measured holds what flock-peer-relay holds, and the reporter). It says its port once
// its slices are synced, then reports its memory whenever the parent asks (a line on stdin).
//   node --expose-gc relay-memory-child.js MODULE API_URL CERT KEY MAX_LOG_EVENTS
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { pathToFileURL } from 'node:url';
import { silentLogger } from '@flock/api';
import { HttpTransport } from '@flock/kube';
import { reporter } from '../policy/memory-report.js';
import type { PeerRelayClass } from './publisher-module.js';

/** Parent → child: report a step once the relay logged `changes` after its first sync. */
export interface Ask {
  step: string;
  changes: number;
}

const [module, url, cert, key, maxLogEvents] = process.argv.slice(2);
if (!module || !url || !cert || !key || !maxLogEvents)
  throw new Error('started by relay-memory.js: MODULE API_URL CERT KEY MAX_LOG_EVENTS');
const report = reporter();
report('before the relay');
const { PeerRelay } = (await import(pathToFileURL(module).href)) as { PeerRelay: PeerRelayClass };
const relay = new PeerRelay({
  transport: new HttpTransport({ server: url }),
  logger: silentLogger,
  allowedUsers: [],
  // Who may read is not what this bench weighs (token-review.ts keeps ≤ 40,000 hashes).
  authenticate: async () => 'allowed',
  tls: { cert: await readFile(cert, 'utf8'), key: await readFile(key, 'utf8') },
  maxLogEvents: Number(maxLogEvents),
  // Every agent connects from 127.0.0.1.
  maxConnectionsPerSource: 100_000,
});
const port = await relay.start(0, '127.0.0.1');
await relay.slices.synced;
report('slices synced: every record', relay.log.size);
const synced = relay.log.seq;
console.log(JSON.stringify({ port }));
for await (const line of createInterface({ input: process.stdin })) {
  const ask = JSON.parse(line) as Ask;
  while (relay.log.seq < synced + ask.changes) await new Promise((r) => setTimeout(r, 50));
  report(ask.step, relay.log.size);
}
await relay.stop();
