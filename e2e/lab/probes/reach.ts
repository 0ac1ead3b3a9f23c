// When each address first answers, seen from inside a namespace (the router's): reads one
// address per line on stdin, probes it (TCP WORKLOAD_PORT, GET /hostname, a new connection)
// every INTERVAL_MS until it answers, and prints {"ip": ADDRESS, "at": EPOCH_MS} then; one
// attempt waits at most TIMEOUT_MS (default 1000). For the pod start-up and Service benchmarks
// (reach-watch.ts): an address is reachable from the router when this prints it.
//   node reach.js PORT INTERVAL_MS [TIMEOUT_MS]
import { isIP } from 'node:net';
import { createInterface } from 'node:readline';
import { setTimeout as delay } from 'node:timers/promises';
import { askHostname } from './ask-hostname.js';

const [portText, intervalText, timeoutText = '1000'] = process.argv.slice(2);
if (
  !/^\d{1,5}$/.test(portText ?? '') ||
  !/^\d+$/.test(intervalText ?? '') ||
  !/^\d+$/.test(timeoutText)
)
  throw new Error('usage: reach.js PORT INTERVAL_MS [TIMEOUT_MS] (addresses on stdin)');
const port = Number(portText);
const intervalMs = Number(intervalText);
const timeoutMs = Number(timeoutText);

const watching = new Set<string>();
async function watch(ip: string): Promise<void> {
  while (!(await askHostname(ip, port, timeoutMs)).ok) await delay(intervalMs);
  process.stdout.write(`${JSON.stringify({ ip, at: Date.now() })}\n`);
}

for await (const line of createInterface({ input: process.stdin })) {
  const ip = line.trim();
  if (isIP(ip) === 0 || watching.has(ip)) continue;
  watching.add(ip);
  void watch(ip);
}
