// The command line of flock's programs, one way for all: a table of flags, each with its help
// line, its default as it would be typed and a zod schema for its value. A flag's value comes
// from `--name VALUE` or `--name=VALUE`, else from the environment variable FLOCK_<NAME> (then
// any further variables the flag names, such as NODE_NAME from the downward API; an empty
// variable counts as unset), else from its default. `--help` is generated from the same table.
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { formatDuration, parseDuration } from './duration.js';
import { LOG_LEVELS } from '../core/logger.js';

interface Flag<S extends z.ZodType = z.ZodType> {
  /** What the flag sets, for --help. */
  help: string;
  /** Checks and converts the value: text from the command line, or a typed value from code. */
  schema: S;
  /** The value when neither the flag nor the environment give one, as it would be typed. */
  default?: string;
  /** The value's placeholder in --help, e.g. PATH or DURATION. */
  arg?: string;
  /** Environment variables read after FLOCK_<NAME>, first one set wins. */
  env?: readonly string[];
  /** The flag's name when it is not the key in kebab-case. */
  flag?: string;
  /** A switch: `--name` alone is true, `--no-name` false, and `--name=BOOL` either. */
  switch?: boolean;
}

type FlagTable = Record<string, Flag>;

/** The settings a table describes: a flag with a default always has a value. */
export type FlagValues<T extends FlagTable> = {
  [K in keyof T]: T[K] extends { default: string }
    ? Exclude<z.output<T[K]['schema']>, undefined>
    : z.output<T[K]['schema']>;
};

/** A bad command line: the message names every problem, one a line. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

const kebab = (key: string) => key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

export class FlagSet<T extends FlagTable> {
  /** Every setting from typed values (tests, embedding programs); defaults fill the gaps. */
  readonly schema: z.ZodType<FlagValues<T>>;
  private readonly names: Map<string, keyof T & string>;

  constructor(
    readonly program: string,
    readonly flags: T,
    /** Lines for the end of --help. */
    private readonly notes: readonly string[] = [],
  ) {
    this.names = new Map(Object.keys(flags).map((k) => [this.flagName(k), k]));
    this.schema = z.object(
      Object.fromEntries(
        Object.entries(flags).map(([k, f]) => [
          k,
          f.default === undefined ? f.schema : f.schema.prefault(f.default),
        ]),
      ),
    ) as unknown as z.ZodType<FlagValues<T>>;
  }

  flagName(key: keyof T & string): string {
    return this.flags[key]?.flag ?? kebab(key);
  }

  envNames(key: keyof T & string): string[] {
    const own = `FLOCK_${this.flagName(key).toUpperCase().replaceAll('-', '_')}`;
    return [own, ...(this.flags[key]?.env ?? [])];
  }

  /**
   * Read `argv` (without node and the script) and `env`. `defaults` replaces table defaults
   * that are only known at run time (a file's content, the host name). Throws UsageError.
   */
  parse(
    argv: readonly string[],
    env: NodeJS.ProcessEnv,
    defaults: Partial<Record<keyof T, string>> = {},
  ): FlagValues<T> {
    const raw = this.readArgv(argv);
    for (const key of Object.keys(this.flags) as (keyof T & string)[]) {
      if (raw[key] !== undefined) continue;
      raw[key] = this.envNames(key)
        .map((n) => env[n])
        .find((v) => v !== undefined && v !== '');
      raw[key] ??= defaults[key];
    }
    const parsed = this.schema.safeParse(raw);
    if (parsed.success) return parsed.data;
    throw new UsageError(
      parsed.error.issues
        .map((issue) => {
          const key = String(issue.path[0] ?? '');
          if (!(key in this.flags)) return issue.message;
          const flag = `--${this.flagName(key)}`;
          if (raw[key] === undefined)
            return `${flag} is required (or $${this.envNames(key).join(', $')})`;
          return `${flag}: ${issue.message}`;
        })
        .join('\n'),
    );
  }

  private readArgv(argv: readonly string[]): Record<string, string | undefined> {
    const raw: Record<string, string | undefined> = {};
    const problems: string[] = [];
    for (let i = 0; i < argv.length; i++) {
      const arg = argv[i] as string;
      if (!arg.startsWith('--') || arg === '--') {
        problems.push(`unexpected argument ${JSON.stringify(arg)}`);
        continue;
      }
      const eq = arg.indexOf('=');
      const name = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
      let value = eq < 0 ? undefined : arg.slice(eq + 1);
      const negated = name.startsWith('no-') ? this.names.get(name.slice(3)) : undefined;
      if (negated && this.flags[negated]?.switch && value === undefined) {
        raw[negated] = 'false';
        continue;
      }
      const key = this.names.get(name);
      if (!key) {
        problems.push(`unknown flag --${name}`);
        continue;
      }
      if (value === undefined && this.flags[key]?.switch) value = 'true';
      if (value === undefined) {
        const next = argv[i + 1];
        if (next === undefined || next.startsWith('--')) {
          problems.push(`--${name} needs a value`);
          continue;
        }
        value = next;
        i++;
      }
      raw[key] = value;
    }
    if (problems.length) throw new UsageError(problems.join('\n'));
    return raw;
  }

  /** `PROGRAM --help`. */
  usage(): string {
    const rows = Object.entries(this.flags).map(([key, f]) => {
      const name = this.flagName(key);
      const left = `--${name}${f.switch ? '[=BOOL]' : ` ${f.arg ?? 'VALUE'}`}`;
      const notes = [
        f.default ? `default ${f.default}` : '',
        f.env?.length ? `or $${f.env.join(', $')}` : '',
      ].filter(Boolean);
      return [left, notes.length ? `${f.help} (${notes.join('; ')})` : f.help] as const;
    });
    rows.push(['--help', 'print this and exit'], ['--version', 'print the version and exit']);
    const width = Math.max(...rows.map(([left]) => left.length)) + 2;
    return [
      `usage: ${this.program} [flags]`,
      ...rows.map(([left, text]) => `  ${left.padEnd(width)}${text}`),
      'Every flag can also be set as FLOCK_<FLAG>, e.g. FLOCK_LOG_LEVEL=debug; the flag wins.',
      'Durations are written as in Go: 500ms, 90s, 5m, 1h30m.',
      ...this.notes,
    ].join('\n');
  }
}

interface CommandLine {
  argv: readonly string[];
  env: NodeJS.ProcessEnv;
  version: () => string;
  out?: { stdout: NodeJS.WritableStream; stderr: NodeJS.WritableStream };
}

/**
 * The start of a program's main: answers --help and --version, reports a bad command line on
 * stderr with exit code 2 (as Go's flag package does). Undefined: the program has nothing more
 * to do. `read` is the program's own parse (default: the flag set's), e.g. with checks across
 * flags; its UsageError is reported the same way.
 */
export function readCommandLine<T extends FlagTable, V = FlagValues<T>>(
  flags: FlagSet<T>,
  cli: CommandLine,
  read: () => V = () => flags.parse(cli.argv, cli.env) as V,
): V | undefined {
  const { stdout, stderr } = cli.out ?? process;
  if (cli.argv.includes('--help') || cli.argv.includes('-h')) {
    stdout.write(`${flags.usage()}\n`);
    return undefined;
  }
  if (cli.argv.includes('--version')) {
    stdout.write(`${flags.program} ${cli.version()}\n`);
    return undefined;
  }
  try {
    return read();
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    stderr.write(`${flags.program}: ${err.message}\n(${flags.program} --help lists the flags)\n`);
    process.exitCode = 2;
    return undefined;
  }
}

/** The version in a package.json (a program's own, next to its src/ and dist/). */
export function packageVersion(packageJson: URL): string {
  const pkg: unknown = JSON.parse(readFileSync(packageJson, 'utf8'));
  return z.object({ version: z.string().min(1) }).parse(pkg).version;
}

// Value schemas for flags: each takes the text of a command line or a typed value from code.

/** Milliseconds, from a Go-style duration ("90s") or a number of milliseconds. */
export function durationFlag(minMs = 0) {
  return z.union([z.int().min(0), z.string()]).transform((v, ctx) => {
    const ms = typeof v === 'number' ? v : parseDuration(v.trim());
    if (ms === undefined) {
      ctx.addIssue({ code: 'custom', message: `"${v}" is not a duration like 500ms, 90s, 1h30m` });
      return z.NEVER;
    }
    if (ms < minMs) {
      ctx.addIssue({ code: 'custom', message: `must be at least ${formatDuration(minMs)}` });
      return z.NEVER;
    }
    return ms;
  });
}

/** A whole number in [min, max], from its digits or a number. */
export function intFlag(min: number, max: number) {
  return z
    .union([z.number(), z.string()])
    .transform((v, ctx) => {
      if (typeof v === 'number') return v;
      if (/^\d+$/.test(v)) return Number(v);
      ctx.addIssue({ code: 'custom', message: `"${v}" is not a whole number` });
      return z.NEVER;
    })
    .pipe(z.int().min(min, `must be at least ${min}`).max(max, `must be at most ${max}`));
}

/** true or false, from the words or a boolean. */
export function boolFlag() {
  return z.union([z.boolean(), z.string()]).transform((v, ctx) => {
    if (typeof v === 'boolean') return v;
    if (v === 'true' || v === 'false') return v === 'true';
    ctx.addIssue({ code: 'custom', message: `must be true or false, not "${v}"` });
    return z.NEVER;
  });
}

/** An absolute path. */
export function pathFlag() {
  return z.string().startsWith('/', 'must be an absolute path');
}

// Flags every program has.

/** --kubeconfig: loadKubeConfig's path (unset: $KUBECONFIG, in-cluster, ~/.kube/config). */
export const kubeconfigFlag = {
  help: 'credentials (default: $KUBECONFIG, in-cluster, ~/.kube/config)',
  arg: 'PATH',
  schema: z.string().min(1).optional(),
} satisfies Flag;

/** --log-level, default info. */
export const logLevelFlag = {
  help: LOG_LEVELS.join(', '),
  arg: 'LEVEL',
  schema: z.enum(LOG_LEVELS),
  default: 'info',
} satisfies Flag;
