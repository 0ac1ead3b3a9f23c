import { mkdtemp, mkdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { CommandError, type RunOptions, type RunResult } from '@flock/exec';
import { DEFAULT_COMMAND_TIMEOUT_MS, IprouteKernel } from './iproute-kernel.js';
import { ApplyError } from './kernel.js';
import { HOST, podNs, type Action } from './model.js';

interface Call {
  file: string;
  args: readonly string[];
  options?: RunOptions;
}

/** A runner that records calls and answers from a script. */
function scripted(answer: (call: Call) => RunResult | CommandError) {
  const calls: Call[] = [];
  const runner = (
    file: string,
    args: readonly string[],
    options?: RunOptions,
  ): Promise<RunResult> => {
    const call = { file, args, ...(options ? { options } : {}) };
    calls.push(call);
    const a = answer(call);
    return a instanceof CommandError ? Promise.reject(a) : Promise.resolve(a);
  };
  return { calls, runner };
}

const ok = (stdout = ''): RunResult => ({ stdout, stderr: '', code: 0 });
const step = 'host-routes' as const;
const actions: Action[] = [
  { op: 'link-set', step: 'host-link', name: 'flocka', up: true },
  {
    op: 'route-replace',
    step,
    route: { dst: '192.0.2.5/32', type: 'unicast', proto: 241, nexthops: [{ dev: 'flocka' }] },
  },
];

describe('IprouteKernel', () => {
  it('writes one batch through nsenter when the node side is a test namespace', async () => {
    const { calls, runner } = scripted(() => ok());
    await new IprouteKernel({ hostNetns: '/run/netns/node', runner }).apply(HOST, actions);
    expect(calls).toEqual([
      {
        file: 'nsenter',
        args: ['--net=/run/netns/node', 'ip', '-batch', '-'],
        options: {
          input: 'link set dev flocka up\nroute replace 192.0.2.5/32 dev flocka proto 241\n',
          timeoutMs: DEFAULT_COMMAND_TIMEOUT_MS,
        },
      },
    ]);
    await new IprouteKernel({ runner }).apply(HOST, []);
    expect(calls).toHaveLength(1);
  });

  it('charges a failure to the line ip names, and says when the object exists', async () => {
    const fail = (stderr: string, code = 1) =>
      new CommandError('ip', [], code, stderr, '', `exit code ${code}`);
    const k1 = new IprouteKernel({
      runner: scripted(() => fail('RTNETLINK answers: File exists\nCommand failed -:2\n')).runner,
    });
    const e1 = await k1.apply(HOST, actions).catch((e: unknown) => e);
    expect(e1).toBeInstanceOf(ApplyError);
    expect(e1).toMatchObject({ step: 'host-routes', index: 1, exists: true });
    expect((e1 as Error).message).toMatch(/^route replace 192\.0\.2\.5\/32 .*File exists/);
    const k2 = new IprouteKernel({
      runner: scripted(() => fail('Error: argument "/x" is wrong: Invalid "netns" value', 255))
        .runner,
    });
    expect(await k2.apply(HOST, actions).catch((e: unknown) => e)).toMatchObject({
      step: 'host-link',
      index: -1,
      exists: false,
    });
  });

  it('reads a pod through nsenter and refuses a namespace that is gone', async () => {
    const { calls, runner } = scripted(() => ok('[]\n[]'));
    const k = new IprouteKernel({ runner });
    const dir = await mkdtemp(join(tmpdir(), 'flock-netns-'));
    try {
      const netns = join(dir, 'ns');
      await writeFile(netns, '');
      expect(await k.read(podNs(netns), { links: 'all', neighbours: true })).toEqual({
        links: [],
        routes: [],
        neighbours: [],
      });
      expect(calls[0]).toEqual({
        file: 'nsenter',
        args: [`--net=${netns}`, 'ip', '-N', '-d', '-json', '-force', '-batch', '-'],
        options: {
          input: 'address show\nneigh show\n',
          okCodes: [0, 1],
          timeoutMs: DEFAULT_COMMAND_TIMEOUT_MS,
        },
      });
      await expect(k.read(podNs(join(dir, 'gone')), { links: 'all' })).rejects.toThrow(
        /does not exist/,
      );
      expect(calls).toHaveLength(1);
    } finally {
      await rm(dir, { recursive: true });
    }
  });

  it('writes sysctls under its /proc/sys root, never creating a key', async () => {
    const root = await mkdtemp(join(tmpdir(), 'flock-sys-'));
    try {
      await mkdir(join(root, 'net/ipv4'), { recursive: true });
      await writeFile(join(root, 'net/ipv4/ip_forward'), '0');
      const k = new IprouteKernel({ procSys: root });
      const res = await k.writeHostSysctls({
        'net.ipv4.ip_forward': '1',
        'net.ipv6.fib_multipath_hash_policy': '1',
      });
      expect(res[0]).toEqual({ key: 'net.ipv4.ip_forward', value: '1', ok: true, changed: true });
      expect(res[1]).toMatchObject({ key: 'net.ipv6.fib_multipath_hash_policy', ok: false });
      expect(res[1]?.error).toMatch(/ENOENT/);
      expect(await readFile(join(root, 'net/ipv4/ip_forward'), 'utf8')).toBe('1');
    } finally {
      await rm(root, { recursive: true });
    }
  });

  it('reads each sysctl first: one that has its value already is not written (a read-only /proc/sys is fine)', async () => {
    const root = await mkdtemp(join(tmpdir(), 'flock-sys-'));
    try {
      await mkdir(join(root, 'net/ipv4'), { recursive: true });
      const file = join(root, 'net/ipv4/ip_forward');
      await writeFile(file, '1\n'); // as the kernel shows it
      await utimes(file, 0, 0);
      const res = await new IprouteKernel({ procSys: root }).writeHostSysctls({
        'net.ipv4.ip_forward': '1',
      });
      expect((await stat(file)).mtimeMs).toBe(0); // never opened for writing
      expect(res).toEqual([{ key: 'net.ipv4.ip_forward', value: '1', ok: true, changed: false }]);
    } finally {
      await rm(root, { recursive: true });
    }
  });

  it('writes sysctls with nsenter + sysctl in a test namespace, one key at a time, where they differ', async () => {
    const { calls, runner } = scripted((c) => {
      if (c.args.includes('-n')) return ok(c.args.includes('net.ipv4.ip_forward') ? '1\n' : '0\n');
      return c.args.includes('net.ipv6.fib_multipath_hash_policy=1')
        ? new CommandError(
            'nsenter',
            c.args,
            255,
            'sysctl: permission denied on key "net.ipv6.fib_multipath_hash_policy"',
            '',
            'exit code 255',
          )
        : ok();
    });
    const res = await new IprouteKernel({ hostNetns: '/run/netns/node', runner }).writeHostSysctls({
      'net.ipv4.ip_forward': '1',
      'net.ipv6.conf.all.forwarding': '1',
      'net.ipv6.fib_multipath_hash_policy': '1',
    });
    expect(calls.map((c) => [c.file, ...c.args].join(' '))).toEqual([
      'nsenter --net=/run/netns/node sysctl -n net.ipv4.ip_forward',
      'nsenter --net=/run/netns/node sysctl -n net.ipv6.conf.all.forwarding',
      'nsenter --net=/run/netns/node sysctl -w net.ipv6.conf.all.forwarding=1',
      'nsenter --net=/run/netns/node sysctl -n net.ipv6.fib_multipath_hash_policy',
      'nsenter --net=/run/netns/node sysctl -w net.ipv6.fib_multipath_hash_policy=1',
    ]);
    expect(res.map((r) => [r.ok, r.changed, r.error])).toEqual([
      [true, false, undefined],
      [true, true, undefined],
      [
        false,
        false,
        'it is 0: sysctl: permission denied on key "net.ipv6.fib_multipath_hash_policy"',
      ],
    ]);
  });
});
