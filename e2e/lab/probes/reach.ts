// When each address first answers, seen from inside a namespace (the router's): reads one
// address per line on stdin, probes it (TCP WORKLOAD_PORT, GET /hostname, a new connection)
// every INTERVAL_MS until it answers, and prints {"ip": ADDRESS, "at": EPOCH_MS} then. For the
// pod start-up benchmark: a pod is reachable from the router when this prints it.
//   node reach.js PORT INTERVAL_MS
import { isIP } from 'node:net';
import { createInterface } from 'node:readline';
import { setTimeout as delay } from 'node:timers/promises';
import { askHostname } from './ask-hostname.js';

const [portText, intervalText] = process.argv.slice(2);
if (!/^\d{1,5}$/.test(portText ?? '') || !/^\d+$/.test(intervalText ?? ''))
  throw new Error('usage: reach.js PORT INTERVAL_MS (addresses on stdin)');
const port = Number(portText);
const intervalMs = Number(intervalText);

const watching = new Set<string>();
async function watch(ip: string): Promise<void> {
  while (!(await askHostname(ip, port, 1_000)).ok) await delay(intervalMs);
  process.stdout.write(`${JSON.stringify({ ip, at: Date.now() })}\n`);
}

for await (const line of createInterface({ input: process.stdin })) {
  const ip = line.trim();
  if (isIP(ip) === 0 || watching.has(ip)) continue;
  watching.add(ip);
  void watch(ip);
}
