// What the router sees while something disruptive happens (a rolling upgrade, an uninstall):
// a continuous prober (prober.ts) inside the router's namespace against the workloads, and every
// change of the router's kernel routes (`ip monitor route`). Stopped, it returns the failed
// probes, the per-target counts and the route deletions.
import type { ChildProcess } from 'node:child_process';
import { isIPv6 } from 'node:net';
import { z } from 'zod';
import { labScript } from '../core/plan.js';
import type { LabRouter } from '../core/router.js';
import { WORKLOAD_PORT } from './status.js';

const Line = z.union([
  z.object({ started: z.literal(true) }),
  z.object({
    failure: z.object({
      target: z.string(),
      started: z.string(),
      at: z.string(),
      error: z.string(),
    }),
  }),
  z.object({
    summary: z.record(z.string(), z.object({ ok: z.number(), failed: z.number() })),
  }),
]);

export interface RouterWatchResult {
  /** Each failed attempt: when it started and ended (the prober's clock), and why. */
  failures: { target: string; started: string; at: string; error: string }[];
  /** Per target: probes answered and failed. */
  summary: Record<string, { ok: number; failed: number }>;
  /** `ip -ts monitor route` lines of removed routes ("[time] Deleted ..."). */
  deleted: string[];
  /** Every route change seen, each line prefixed with the router's clock ("[2026-...]"). */
  changes: string[];
}

export class RouterWatch {
  private output = '';

  private constructor(
    private readonly prober: ChildProcess,
    private readonly monitor: { lines: string[]; stop: () => void },
  ) {
    prober.stdout?.on('data', (d: Buffer) => (this.output += d.toString()));
  }

  /** Probe every address (port WORKLOAD_PORT) every intervalMs, each attempt timeoutMs. */
  static start(router: LabRouter, ips: string[], intervalMs = 200, timeoutMs = 1000): RouterWatch {
    const targets = ips.map((ip) => (isIPv6(ip) ? `[${ip}]` : ip) + `:${WORKLOAD_PORT}`);
    const prober = router.ns.spawn(process.execPath, [
      labScript('prober'),
      String(intervalMs),
      String(timeoutMs),
      ...targets,
    ]);
    return new RouterWatch(prober, router.monitorRoutes(['-ts']));
  }

  /** The prober has finished its first round. */
  probed(): boolean {
    return this.output.includes('{"started":true}');
  }

  async stop(): Promise<RouterWatchResult> {
    this.monitor.stop();
    if (this.prober.exitCode === null && this.prober.signalCode === null) {
      const exited = new Promise<void>((resolve) => this.prober.once('exit', () => resolve()));
      this.prober.kill('SIGTERM');
      await exited;
    }
    if (!this.output.includes('{"summary"'))
      throw new Error(`the prober ended without its summary: ${this.output.slice(-500)}`);
    const result: RouterWatchResult = { failures: [], summary: {}, deleted: [], changes: [] };
    for (const text of this.output.split('\n').filter(Boolean)) {
      const line = Line.parse(JSON.parse(text));
      if ('failure' in line) result.failures.push(line.failure);
      else if ('summary' in line) result.summary = line.summary;
    }
    result.changes = [...this.monitor.lines];
    result.deleted = result.changes.filter((l) => /^(\[[^\]]*\] )?Deleted /.test(l));
    return result;
  }
}
