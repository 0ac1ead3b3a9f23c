// A continuous prober, run inside a namespace (the router's) while something disruptive happens
// (a rolling upgrade): every INTERVAL_MS it asks each target GET /hostname over a new TCP
// connection, TIMEOUT_MS per attempt. Each failure is printed at once as a JSON line
// {"failure": {...}}, the end of the first round as {"started": true}; on SIGTERM it prints {"summary": {target: {ok, failed}}}
// and exits. One process for the whole run, so the probe rate does not depend on process starts.
//   node prober.js INTERVAL_MS TIMEOUT_MS ADDRESS:PORT|[ADDRESS]:PORT ...
import { isIP } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { askHostname } from './ask-hostname.js';

interface Target {
  key: string;
  host: string;
  port: number;
}

function parseTarget(text: string): Target {
  const m = /^\[([0-9a-f:]+)\]:(\d{1,5})$/i.exec(text) ?? /^([0-9.]+):(\d{1,5})$/.exec(text);
  if (!m || isIP(m[1]!) === 0) throw new Error(`bad target ${JSON.stringify(text)}`);
  return { key: text, host: m[1]!, port: Number(m[2]) };
}

const [intervalText, timeoutText, ...targetTexts] = process.argv.slice(2);
if (!/^\d+$/.test(intervalText ?? '') || !/^\d+$/.test(timeoutText ?? '') || !targetTexts.length)
  throw new Error('usage: prober.js INTERVAL_MS TIMEOUT_MS TARGET...');
const intervalMs = Number(intervalText);
const timeoutMs = Number(timeoutText);
const targets = targetTexts.map(parseTarget);
const counts = new Map(targets.map((t) => [t.key, { ok: 0, failed: 0 }]));

let running = true;
const stop = () => {
  running = false;
};
process.on('SIGTERM', stop);

let rounds = 0;
while (running) {
  const started = Date.now();
  await Promise.all(
    targets.map(async (t) => {
      const startedAt = new Date().toISOString();
      const answer = await askHostname(t.host, t.port, timeoutMs);
      const c = counts.get(t.key)!;
      if (answer.ok) c.ok++;
      else {
        c.failed++;
        const failure = {
          target: t.key,
          started: startedAt,
          at: new Date().toISOString(),
          error: answer.error,
        };
        process.stdout.write(`${JSON.stringify({ failure })}\n`);
      }
    }),
  );
  if (++rounds === 1) process.stdout.write(`${JSON.stringify({ started: true })}\n`);
  await delay(Math.max(0, intervalMs - (Date.now() - started)));
}
process.stdout.write(`${JSON.stringify({ summary: Object.fromEntries(counts) })}\n`);
process.exit(0);
