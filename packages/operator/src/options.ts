// Command-line flags and environment of flock-operator, validated with zod. A flag wins over
// its environment variable (FLOCK_<FLAG_NAME>, e.g. FLOCK_LEASE_NAME); the pod's own name and
// namespace come from the downward API (POD_NAME, POD_NAMESPACE) or the service account.
import { existsSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { DnsLabel, DnsSubdomain } from '@flock/api';
import { DEFAULT_PREFIX_QUARANTINE_MS } from '@flock/ipam';
import { LOG_LEVELS } from '@flock/kube';
import { z } from 'zod';
import { DEFAULT_LEASE_NAME, DEFAULT_NAMESPACE } from './names.js';

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000 };

/** Go-style durations: "24h", "90s", "1h30m", "500ms"; a bare "0" is zero. */
export function parseDuration(text: string): number | undefined {
  if (text === '0') return 0;
  if (!/^(\d+(\.\d+)?(ms|s|m|h))+$/.test(text)) return undefined;
  let total = 0;
  for (const [, n, unit] of text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)) {
    total += Number(n) * (UNITS[unit as string] as number);
  }
  return Math.round(total);
}

const duration = (what: string, minMs = 0) =>
  z.string().transform((s, ctx) => {
    const ms = parseDuration(s.trim());
    if (ms === undefined) {
      ctx.addIssue({
        code: 'custom',
        message: `${what}: "${s}" is not a duration like 90s, 5m, 24h`,
      });
      return z.NEVER;
    }
    if (ms < minMs) {
      ctx.addIssue({ code: 'custom', message: `${what} must be at least ${minMs} ms` });
      return z.NEVER;
    }
    return ms;
  });

const int = (what: string, min: number, max: number) =>
  z
    .string()
    .regex(/^\d+$/, `${what} must be a whole number`)
    .transform(Number)
    .pipe(
      z
        .int()
        .min(min, `${what} must be at least ${min}`)
        .max(max, `${what} must be at most ${max}`),
    );

const bool = (what: string) =>
  z
    .enum(['true', 'false'], { message: `${what} must be true or false` })
    .transform((v) => v === 'true');

const CliOptions = z.object({
  kubeconfig: z.string().min(1).optional(),
  namespace: DnsLabel,
  leaderElect: bool('--leader-elect'),
  leaseName: DnsSubdomain,
  identity: z.string().min(1).max(100),
  leaseDuration: duration('--lease-duration', 1_000),
  renewDeadline: duration('--renew-deadline', 1_000),
  retryPeriod: duration('--retry-period', 100),
  healthPort: int('--health-port', 0, 65535),
  healthHost: z.string(),
  logLevel: z.enum(LOG_LEVELS as [string, ...string[]]),
  prefixQuarantine: duration('--prefix-quarantine'),
  concurrency: int('--concurrency', 1, 256),
  workers: int('--workers', 1, 16),
  watchdog: duration('--watchdog', 1_000),
});
export type CliOptions = z.infer<typeof CliOptions>;

/** flag name → default (strings, as they would be typed). */
const FLAGS = {
  kubeconfig: undefined,
  namespace: undefined,
  'leader-elect': 'true',
  'lease-name': DEFAULT_LEASE_NAME,
  identity: undefined,
  'lease-duration': '15s',
  'renew-deadline': '10s',
  'retry-period': '2s',
  'health-port': '8080',
  // Empty: every address of both families (see @flock/kube's health server).
  'health-host': '',
  'log-level': 'info',
  'prefix-quarantine': `${DEFAULT_PREFIX_QUARANTINE_MS / 3_600_000}h`,
  concurrency: '16',
  workers: '2',
  watchdog: '5m',
} as const;
type Flag = keyof typeof FLAGS;

export const USAGE = `usage: flock-operator [flags]
  --kubeconfig PATH          credentials (default: $KUBECONFIG, in-cluster, ~/.kube/config)
  --namespace NS             namespace of the leader election Lease ($POD_NAMESPACE, the
                             service account's namespace, else ${DEFAULT_NAMESPACE})
  --leader-elect=BOOL        elect a leader through a Lease (default true)
  --lease-name NAME          Lease name (default ${DEFAULT_LEASE_NAME})
  --identity ID              this replica in the Lease ($POD_NAME, else the hostname; a
                             random suffix is added)
  --lease-duration D         --renew-deadline D  --retry-period D   (15s, 10s, 2s)
  --health-port N            /healthz, /readyz and /metrics (default 8080; 0 = off)
  --health-host ADDR         address to serve them on (default: all, IPv6 and IPv4)
  --log-level L              error, warn, info, debug (default info)
  --prefix-quarantine D      how long a freed node prefix is held back (default 24h)
  --concurrency N            API writes in flight at most (default 16)
  --workers N                pools reconciled in parallel (default 2)
  --watchdog D               restart a watch silent for this long (default 5m)
  --help                     print this and exit
  --version                  print the version and exit
Every flag can also be set as FLOCK_<NAME>, e.g. FLOCK_LEASE_NAME=flock-operator.`;

const SA_NAMESPACE = '/var/run/secrets/kubernetes.io/serviceaccount/namespace';

const camel = (flag: string) => flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());
const kebab = (name: string) => name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
const envName = (flag: string) => `FLOCK_${flag.toUpperCase().replace(/-/g, '_')}`;

export class UsageError extends Error {}

/** Parse argv (without node and script) and the environment; throws UsageError with every problem. */
export function parseOptions(
  argv: readonly string[],
  env: NodeJS.ProcessEnv = process.env,
  saNamespaceFile = SA_NAMESPACE,
): CliOptions {
  // --leader-elect alone means true; --leader-elect=false / --no-leader-elect turn it off.
  const args = argv.map((a) =>
    a === '--leader-elect'
      ? '--leader-elect=true'
      : a === '--no-leader-elect'
        ? '--leader-elect=false'
        : a,
  );
  let values: Record<string, string | undefined>;
  try {
    ({ values } = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: Object.fromEntries(Object.keys(FLAGS).map((f) => [f, { type: 'string' as const }])),
    }) as { values: Record<string, string | undefined> });
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  const raw: Record<string, string | undefined> = {};
  for (const flag of Object.keys(FLAGS) as Flag[]) {
    raw[camel(flag)] = values[flag] ?? env[envName(flag)] ?? FLAGS[flag];
  }
  raw['namespace'] ??=
    env['POD_NAMESPACE'] ||
    (existsSync(saNamespaceFile) ? readFileSync(saNamespaceFile, 'utf8').trim() : undefined) ||
    DEFAULT_NAMESPACE;
  raw['identity'] ??= env['POD_NAME'] || hostname();
  const parsed = CliOptions.safeParse(raw);
  if (!parsed.success) {
    throw new UsageError(
      parsed.error.issues
        .map((i) => `--${kebab(String(i.path[0] ?? 'options'))}: ${i.message}`)
        .join('\n'),
    );
  }
  const o = parsed.data;
  if (!(o.leaseDuration > o.renewDeadline && o.renewDeadline > o.retryPeriod * 1.2)) {
    throw new UsageError('need --lease-duration > --renew-deadline > 1.2 × --retry-period');
  }
  return o;
}
