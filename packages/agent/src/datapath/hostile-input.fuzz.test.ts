// Security: interface names, netns paths, container IDs and addresses carrying shell
// metacharacters, path tricks, control characters or oversize are refused by the datapath's
// validators before any command runs. The exec seam (IprouteKernel's runner) records every
// call: a refused operation makes none, and an accepted one only passes safe tokens.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { RunOptions, RunResult } from '@flock/exec';
import { assertSafeToken } from './commands.js';
import { IprouteDatapath } from './iproute.js';
import { DatapathError, type PodSpec, type PodTeardownSpec } from './types.js';

const RUNS = process.env['FLOCK_SOAK'] === '1' ? 100_000 : 10_000;
const TIMEOUT = process.env['FLOCK_SOAK'] === '1' ? 900_000 : 120_000;

interface Call {
  file: string;
  args: readonly string[];
  input?: string | undefined;
}

/** The datapath with a runner that records instead of running (answers: empty output). */
function recorded() {
  const calls: Call[] = [];
  const runner = async (file: string, args: readonly string[], o: RunOptions = {}) => {
    calls.push({ file, args, input: o.input });
    return { stdout: '', stderr: '', code: 0 } satisfies RunResult;
  };
  return { calls, datapath: new IprouteDatapath({ runner }) };
}

/** Every argument and every batch token: the shapes a command line may carry. */
function expectSafe(calls: readonly Call[]) {
  for (const c of calls) {
    expect(['ip', 'nsenter']).toContain(c.file);
    for (const a of c.args) expect(a).toMatch(/^[A-Za-z0-9_.:/=-]+$/);
    for (const line of (c.input ?? '').split('\n').filter(Boolean))
      for (const token of line.split(' ')) expect(() => assertSafeToken(token)).not.toThrow();
  }
}

/** Pieces no validator may let through: each has a character outside every allowed alphabet. */
const poison = fc.constantFrom(
  ';',
  ' ; reboot',
  '$(id)',
  '`id`',
  '|',
  '&',
  '>',
  '<',
  '\n',
  '\r',
  '\0',
  '\t',
  ' ',
  '"',
  "'",
  '\\',
  '*',
  '?',
  '{a,b}',
  '~',
  '!',
  '#',
  '%',
  '\u00a0',
  '\u202e',
  'é',
);
/** A good value with poison put somewhere inside it. */
const poisoned = (good: string) =>
  fc
    .tuple(fc.nat({ max: good.length }), poison)
    .map(([at, p]) => good.slice(0, at) + p + good.slice(at));

const pod: PodSpec = {
  containerID: 'c0ffee42',
  ifName: 'eth0',
  netns: '/var/run/netns/cni-1234',
  hostVeth: 'flock12345678',
  ip6: '2001:db8:100::5',
  ip4: '192.0.2.5',
  anycast: ['2001:db8:aaaa::1'],
};

/** Values refused for each field, whatever the datapath is asked to do with them. */
const badFields: Record<
  'containerID' | 'ifName' | 'netns' | 'hostVeth' | 'ip',
  fc.Arbitrary<string>
> = {
  containerID: fc.oneof(
    poisoned('c0ffee42'),
    fc.constantFrom('../x', '-rf', '.hidden', '', 'a/b', 'x'.repeat(256)),
  ),
  ifName: fc.oneof(
    poisoned('eth0'),
    fc.constantFrom('.', '..', '', 'a/b', 'a:b', 'x'.repeat(16), 'x'.repeat(10_000)),
  ),
  netns: fc.oneof(
    poisoned('/var/run/netns/cni-1234'),
    fc.constantFrom(
      'relative/netns',
      '/var/run/netns/../../../etc/shadow',
      '/proc/1/ns/../../self/root',
      '/..',
      '',
      `/${'a/'.repeat(3000)}`,
    ),
  ),
  hostVeth: fc.oneof(
    poisoned('flock12345678'),
    fc.constantFrom('flock', 'eth0', 'flock123456789ab', '../flock1', 'flock:1'),
  ),
  ip: fc.oneof(
    poisoned('2001:db8:100::5'),
    poisoned('192.0.2.5'),
    fc.constantFrom(
      '2001:db8::5/128',
      'fe80::1%eth0',
      '192.0.2.5 dev lo',
      '0x7f.1',
      '::ffff:192.0.2.1',
      '127.0.0.1',
      '',
    ),
  ),
};

type Op = { name: string; go: (d: IprouteDatapath) => Promise<unknown> };

/** One hostile field in an otherwise good request, for every operation that takes that field. */
const hostileOp: fc.Arbitrary<Op> = fc.oneof(
  fc
    .tuple(fc.constantFrom('containerID', 'ifName', 'netns', 'hostVeth'), fc.constant(0))
    .chain(([field]) =>
      badFields[field as keyof typeof badFields].chain((bad) =>
        fc.constantFrom<Op>(
          { name: `setup ${field}`, go: (d) => d.setupPod({ ...pod, [field]: bad }) },
          { name: `check ${field}`, go: (d) => d.checkPod({ ...pod, [field]: bad }) },
          {
            name: `teardown ${field}`,
            go: (d) => d.teardownPod({ ...(pod as PodTeardownSpec), [field]: bad }),
          },
        ),
      ),
    ),
  badFields.ip.chain((bad) =>
    fc.constantFrom<Op>(
      { name: 'setup ip6', go: (d) => d.setupPod({ ...pod, ip6: bad }) },
      { name: 'setup ip4', go: (d) => d.setupPod({ ...pod, ip4: bad }) },
      { name: 'setup anycast', go: (d) => d.setupPod({ ...pod, anycast: ['2001:db8::9', bad] }) },
      { name: 'teardown ip6', go: (d) => d.teardownPod({ ...pod, ip6: bad }) },
      { name: 'teardown anycast', go: (d) => d.teardownPod({ ...pod, anycast: [bad] }) },
      { name: 'anycast route', go: (d) => d.ensureAnycastRoute(bad, ['flock12345678']) },
      { name: 'blackhole', go: (d) => d.ensureBlackholes(['2001:db8:100::/64', `${bad}/64`]) },
    ),
  ),
  badFields.hostVeth.chain((bad) =>
    fc.constantFrom<Op>(
      { name: 'stray veth', go: (d) => d.deleteStrayVeth(bad) },
      {
        name: 'anycast nexthop',
        go: (d) => d.ensureAnycastRoute('2001:db8:aaaa::1', ['flock12345678', bad]),
      },
    ),
  ),
);

describe('datapath: hostile names, paths and addresses', () => {
  it(
    `refuses them at validation, before any command runs (${RUNS} cases)`,
    async () => {
      const seen = new Set<string>();
      await fc.assert(
        fc.asyncProperty(hostileOp, async (op) => {
          const { calls, datapath } = recorded();
          seen.add(op.name);
          const error = await op.go(datapath).then(
            () => undefined,
            (e: unknown) => e,
          );
          expect(error, `${op.name} was accepted`).toBeInstanceOf(DatapathError);
          expect((error as DatapathError).step).toBe('validate');
          expect((error as Error).message.length).toBeGreaterThan(20);
          expect(calls, `${op.name} ran a command`).toEqual([]);
        }),
        { numRuns: RUNS },
      );
      expect(seen.size).toBe(21); // every operation and field was tried
    },
    TIMEOUT,
  );

  it(
    `passes only safe tokens to commands, whatever the input (${RUNS} cases)`,
    async () => {
      const random = fc.oneof(fc.string({ maxLength: 30, unit: 'binary' }), poisoned('x'));
      const field = (good: string) =>
        fc.oneof({ weight: 3, arbitrary: fc.constant(good) }, { weight: 1, arbitrary: random });
      let accepted = 0;
      await fc.assert(
        fc.asyncProperty(
          fc.record({
            containerID: fc.oneof(fc.stringMatching(/^[a-z0-9]{1,20}$/), random),
            ifName: field('eth0'),
            netns: fc.oneof(
              fc.stringMatching(/^\/[A-Za-z0-9_.-]{1,10}(\/[A-Za-z0-9_.-]{1,10}){0,3}$/),
              random,
            ),
            hostVeth: field('flock12345678'),
            ip6: field('2001:db8::1'),
          }),
          fc.option(field('192.0.2.9'), { nil: undefined }),
          async (spec, ip4) => {
            const { calls, datapath } = recorded();
            const result = await datapath
              .setupPod({ ...spec, ...(ip4 !== undefined ? { ip4 } : {}) })
              .then(
                () => 'ok',
                (e: unknown) => e,
              );
            if (calls.length > 0) accepted++;
            else expect((result as DatapathError).step).toBe('validate');
            expectSafe(calls);
          },
        ),
        { numRuns: RUNS },
      );
      expect(accepted).toBeGreaterThan(0);
    },
    TIMEOUT,
  );
});
