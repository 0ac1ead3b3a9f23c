// A real Prometheus (Debian's prometheus package, /usr/bin/prometheus) for the lab's tests: it
// runs inside the router's namespace (the only place that reaches every node's addresses),
// with its own config and data under the test's directory, listening on the router's
// loopback; the HTTP API is asked through curl in the same namespace. Never the system
// service, never the host's network.
import type { ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Netns } from '@flock/testkit';
import { eventually } from '@flock/testkit';
import { z } from 'zod';

const PORT = 9090;

const Sample = z.tuple([z.number(), z.string()]);
const QueryResult = z.object({
  status: z.literal('success'),
  data: z.object({
    resultType: z.string(),
    result: z.array(z.object({ metric: z.record(z.string(), z.string()), value: Sample })),
  }),
});
export type Series = z.infer<typeof QueryResult>['data']['result'][number];

const Targets = z.object({
  data: z.object({
    activeTargets: z.array(
      z.looseObject({ scrapeUrl: z.string(), health: z.string(), lastError: z.string() }),
    ),
  }),
});
const Rules = z.object({
  data: z.object({
    groups: z.array(
      z.object({
        rules: z.array(
          z.looseObject({ name: z.string(), health: z.string(), state: z.string().optional() }),
        ),
      }),
    ),
  }),
});
const Alerts = z.object({
  data: z.object({
    alerts: z.array(z.object({ labels: z.record(z.string(), z.string()), state: z.string() })),
  }),
});

export interface ScrapeJob {
  job: string;
  /** host:port, IPv6 hosts in brackets. */
  targets: string[];
}

export class LabPrometheus {
  private constructor(
    private readonly ns: Netns,
    private readonly child: ChildProcess,
    readonly dir: string,
  ) {}

  static async start(
    ns: Netns,
    dir: string,
    jobs: ScrapeJob[],
    ruleFiles: string[],
    intervalS = 2,
  ): Promise<LabPrometheus> {
    await mkdir(join(dir, 'data'), { recursive: true });
    const config = [
      'global:',
      `  scrape_interval: ${intervalS}s`,
      `  evaluation_interval: ${intervalS}s`,
      `  scrape_timeout: ${intervalS}s`,
      'rule_files:',
      ...ruleFiles.map((f) => `  - ${JSON.stringify(f)}`),
      'scrape_configs:',
      ...jobs.flatMap((j) => [
        `  - job_name: ${j.job}`,
        '    static_configs:',
        `      - targets: [${j.targets.map((t) => JSON.stringify(t)).join(', ')}]`,
      ]),
      '',
    ].join('\n');
    const configPath = join(dir, 'prometheus.yml');
    await writeFile(configPath, config);
    await ns.exec('promtool', ['check', 'config', configPath]);
    const child = ns.spawn('prometheus', [
      `--config.file=${configPath}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${PORT}`,
    ]);
    // Its log goes to a file (an unread pipe would fill up and stall it).
    const log = createWriteStream(join(dir, 'prometheus.log'));
    child.stdout?.pipe(log);
    child.stderr?.pipe(log);
    const prometheus = new LabPrometheus(ns, child, dir);
    try {
      await eventually('Prometheus ready', () => prometheus.get('/-/ready').then(() => true), {
        timeoutMs: 60_000,
        intervalMs: 500,
      });
    } catch (e) {
      await prometheus.stop();
      throw e;
    }
    return prometheus;
  }

  /** GET a path of the HTTP API (query parameters URL-encoded by curl). */
  async get(path: string, params: Record<string, string> = {}): Promise<unknown> {
    const args = ['-sS', '--fail-with-body', '--max-time', '10', '--get'];
    for (const [k, v] of Object.entries(params)) args.push('--data-urlencode', `${k}=${v}`);
    const { stdout } = await this.ns.exec('curl', [...args, `http://127.0.0.1:${PORT}${path}`]);
    return path.startsWith('/api/') ? JSON.parse(stdout) : stdout;
  }

  async query(expr: string): Promise<Series[]> {
    return QueryResult.parse(await this.get('/api/v1/query', { query: expr })).data.result;
  }

  async targets() {
    return Targets.parse(await this.get('/api/v1/targets')).data.activeTargets;
  }

  async rules() {
    return Rules.parse(await this.get('/api/v1/rules')).data.groups.flatMap((g) => g.rules);
  }

  async alerts() {
    return Alerts.parse(await this.get('/api/v1/alerts')).data.alerts;
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((r) => this.child.once('exit', () => r()));
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }
}

/** A query's answer counts as data when some series has a number (not NaN) as its value. */
export function hasData(series: Series[]): boolean {
  return series.some((s) => !Number.isNaN(Number(s.value[1])));
}
