// The router's reach prober (reach.ts in the router's namespace) driven from the host: addresses
// in, the moment each first answered out (the host's clock). For the benchmarks that time "an
// address answers from outside the cluster".
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import type { Lab } from '../core/lab.js';
import { labScript, WORKLOAD_PORT } from '../core/plan.js';

const Reached = z.object({ ip: z.string(), at: z.number() });

/**
 * Probe every added address every `intervalMs` (a new TCP connection, GET /hostname on the
 * workload port) until it answers; `timeoutMs` bounds one attempt (a dropped SYN: a node's
 * blackhole) and so the resolution while nothing answers.
 */
export function startReach(lab: Lab, intervalMs = 50, timeoutMs = 1_000) {
  const child = spawn(
    'ip',
    [
      ...['netns', 'exec', lab.router!.ns.name, process.execPath, labScript('reach')],
      ...[String(WORKLOAD_PORT), String(intervalMs), String(timeoutMs)],
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const reached = new Map<string, number>();
  void (async () => {
    for await (const line of createInterface({ input: child.stdout })) {
      const { ip, at } = Reached.parse(JSON.parse(line));
      reached.set(ip, at);
    }
  })();
  return {
    reached,
    add: (ip: string) => child.stdin.write(`${ip}\n`),
    stop: () => child.kill('SIGKILL'),
  };
}
