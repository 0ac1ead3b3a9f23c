import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  FlagSet,
  UsageError,
  boolFlag,
  durationFlag,
  intFlag,
  logLevelFlag,
  pathFlag,
  readCommandLine,
} from './flags.js';

const flags = new FlagSet('flock-test', {
  nodeName: { help: 'the node', arg: 'NAME', schema: z.string().min(1), env: ['NODE_NAME'] },
  socketPath: { flag: 'socket', help: 'a socket', arg: 'PATH', schema: pathFlag(), default: '/s' },
  resyncMs: {
    flag: 'resync',
    help: 'resync',
    arg: 'DURATION',
    schema: durationFlag(),
    default: '30s',
  },
  watchdog: { help: 'watchdog', arg: 'DURATION', schema: durationFlag(1000), default: '3m' },
  port: { help: 'port', arg: 'PORT', schema: intFlag(0, 65535), default: '8080' },
  elect: { help: 'elect', schema: boolFlag(), default: 'true', switch: true },
  logLevel: logLevelFlag,
  host: { help: 'host', arg: 'ADDR', schema: z.string().optional() },
});

const problems = (argv: string[], env: NodeJS.ProcessEnv = {}) => {
  try {
    flags.parse(argv, env);
    return '';
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    return (err as Error).message;
  }
};

describe('FlagSet', () => {
  it('takes a flag over FLOCK_<FLAG> over further variables over the default', () => {
    expect(flags.parse(['--node-name', 'a'], { FLOCK_NODE_NAME: 'b', NODE_NAME: 'c' })).toEqual({
      nodeName: 'a',
      socketPath: '/s',
      resyncMs: 30_000,
      watchdog: 180_000,
      port: 8080,
      elect: true,
      logLevel: 'info',
    });
    expect(flags.parse([], { FLOCK_NODE_NAME: 'b', NODE_NAME: 'c' }).nodeName).toBe('b');
    expect(flags.parse([], { FLOCK_NODE_NAME: '', NODE_NAME: 'c' }).nodeName).toBe('c');
    const env = { NODE_NAME: 'n', FLOCK_SOCKET: '/e', FLOCK_RESYNC: '1m30s', FLOCK_PORT: '0' };
    expect(flags.parse(['--port=9'], env)).toMatchObject({
      socketPath: '/e',
      resyncMs: 90_000,
      port: 9,
    });
    expect(flags.parse([], { NODE_NAME: 'n' }, { socketPath: '/run-time' }).socketPath).toBe(
      '/run-time',
    );
  });

  it('reads switches: --x, --no-x, --x=BOOL', () => {
    const elect = (argv: string[], env = {}) => flags.parse(argv, { NODE_NAME: 'n', ...env }).elect;
    expect(elect([])).toBe(true);
    expect(elect(['--no-elect'])).toBe(false);
    expect(elect(['--elect=false'])).toBe(false);
    expect(elect(['--elect'], { FLOCK_ELECT: 'false' })).toBe(true);
    expect(elect([], { FLOCK_ELECT: 'false' })).toBe(false);
    expect(problems(['--elect=maybe'], { NODE_NAME: 'n' })).toBe(
      '--elect: must be true or false, not "maybe"',
    );
  });

  it('names every bad flag, by its flag name', () => {
    expect(problems(['--resync', 'soon', '--watchdog=10ms', '--port', '70000'])).toBe(
      [
        '--node-name is required (or $FLOCK_NODE_NAME, $NODE_NAME)',
        '--resync: "soon" is not a duration like 500ms, 90s, 1h30m',
        '--watchdog: must be at least 1s',
        '--port: must be at most 65535',
      ].join('\n'),
    );
    expect(problems(['--socket', 'rel'], { NODE_NAME: 'n' })).toBe(
      '--socket: must be an absolute path',
    );
    expect(problems(['--port=x'], { NODE_NAME: 'n' })).toBe('--port: "x" is not a whole number');
    expect(problems(['--log-level=loud'], { NODE_NAME: 'n' })).toMatch(/^--log-level: /);
    expect(problems(['--bogus', '1', 'stray', '--socket'])).toBe(
      [
        'unknown flag --bogus',
        'unexpected argument "1"',
        'unexpected argument "stray"',
        '--socket needs a value',
      ].join('\n'),
    );
    expect(problems(['--socket', '--port=1'])).toBe('--socket needs a value');
  });

  it('gives typed values a schema, with the defaults', () => {
    expect(flags.schema.parse({ nodeName: 'n', resyncMs: 500, port: 0, elect: false })).toEqual({
      nodeName: 'n',
      socketPath: '/s',
      resyncMs: 500,
      watchdog: 180_000,
      port: 0,
      elect: false,
      logLevel: 'info',
    });
  });

  it('--help comes from the table', () => {
    const usage = flags.usage();
    expect(usage.split('\n')).toEqual([
      'usage: flock-test [flags]',
      '  --node-name NAME     the node (or $NODE_NAME)',
      '  --socket PATH        a socket (default /s)',
      '  --resync DURATION    resync (default 30s)',
      '  --watchdog DURATION  watchdog (default 3m)',
      '  --port PORT          port (default 8080)',
      '  --elect[=BOOL]       elect (default true)',
      '  --log-level LEVEL    error, warn, info, debug (default info)',
      '  --host ADDR          host',
      '  --help               print this and exit',
      '  --version            print the version and exit',
      'Every flag can also be set as FLOCK_<FLAG>, e.g. FLOCK_LOG_LEVEL=debug; the flag wins.',
      'Durations are written as in Go: 500ms, 90s, 5m, 1h30m.',
    ]);
  });
});

describe('readCommandLine', () => {
  afterEach(() => {
    process.exitCode = undefined;
  });

  const run = (argv: string[]) => {
    const stdout = new PassThrough();
    const stderr = new PassThrough();
    const values = readCommandLine(flags, {
      argv,
      env: { NODE_NAME: 'n' },
      version: () => '1.2.3',
      out: { stdout, stderr },
    });
    return { values, out: String(stdout.read() ?? ''), err: String(stderr.read() ?? '') };
  };

  it('answers --help and --version, and nothing is left to do', () => {
    expect(run(['--help'])).toEqual({ values: undefined, out: `${flags.usage()}\n`, err: '' });
    expect(run(['--node-name=x', '--version'])).toEqual({
      values: undefined,
      out: 'flock-test 1.2.3\n',
      err: '',
    });
    expect(process.exitCode).toBeUndefined();
  });

  it('reports a bad command line with exit code 2', () => {
    const r = run(['--bogus']);
    expect(r.values).toBeUndefined();
    expect(r.err).toBe('flock-test: unknown flag --bogus\n(flock-test --help lists the flags)\n');
    expect(process.exitCode).toBe(2);
  });

  it('returns the values otherwise', () => {
    expect(run(['--resync=1s']).values).toMatchObject({ nodeName: 'n', resyncMs: 1000 });
  });
});
