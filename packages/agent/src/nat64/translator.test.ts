import { EventEmitter } from 'node:events';
import { silentLogger } from '@flock/kube';
import { describe, expect, it } from 'vitest';
import { nat64Address, taygaConfig, translatorIpv4, tunCommands } from './tayga.js';
import { Nat64Translator } from './tayga.js';
import type { TranslatorEdge } from './translator.js';

const WKP = { prefix: '64:ff9b::/96', pool: '192.168.240.0/20' };
const NSP = { prefix: '2001:db8:64::/96', pool: '192.168.240.0/20' };

/** A process table and a file system in memory; every command recorded. */
class FakeEdge implements TranslatorEdge {
  readonly commands: string[] = [];
  readonly files = new Map<string, string>();
  readonly live = new Map<number, { argv: string[]; child: FakeChild }>();
  private nextPid = 100;
  failing: RegExp | undefined;
  /** Devices that exist: made by `tayga --mktun`, gone with `ip link del` (or a test). */
  readonly devices = new Set<string>();

  run(file: string, args: readonly string[]) {
    const line = [file, ...args].join(' ');
    this.commands.push(line);
    if (this.failing?.test(line)) return Promise.reject(new Error(`${line}: failed`));
    if (args[0] === '--mktun') this.devices.add('flock64');
    if (args[0] === 'link' && args[1] === 'del') this.devices.delete(args[2]!);
    if (args[0] === 'link' && args[1] === 'show')
      return Promise.resolve({ stdout: '', stderr: '', code: this.devices.has(args[2]!) ? 0 : 1 });
    return Promise.resolve({ stdout: '', stderr: '', code: 0 });
  }
  spawn(file: string, args: readonly string[]) {
    const child = new FakeChild(this.nextPid++, () => this.live.delete(child.pid));
    this.live.set(child.pid, { argv: [file, ...args], child });
    this.commands.push(`spawn ${[file, ...args].join(' ')}`);
    return child;
  }
  writeFile(path: string, text: string) {
    this.files.set(path, text);
    return Promise.resolve();
  }
  readFile(path: string) {
    return Promise.resolve(this.files.get(path));
  }
  cmdline(pid: number) {
    return Promise.resolve(this.live.get(pid)?.argv);
  }
  kill(pid: number) {
    const p = this.live.get(pid);
    if (!p) throw new Error('ESRCH');
    p.child.exit(null, 'SIGTERM');
  }
  spawned() {
    return this.commands.filter((c) => c.startsWith('spawn'));
  }
}

class FakeChild extends EventEmitter {
  constructor(
    readonly pid: number,
    private readonly gone: () => void,
  ) {
    super();
  }
  kill(signal: NodeJS.Signals = 'SIGTERM') {
    queueMicrotask(() => this.exit(null, signal));
    return true;
  }
  exit(code: number | null, signal: NodeJS.Signals | null) {
    this.gone();
    this.emit('exit', code, signal);
  }
}

const translator = (edge: FakeEdge, restart = { baseMs: 5, maxMs: 20 }) =>
  new Nat64Translator(edge, {
    dir: '/var/lib/flock/nat64',
    tayga: '/usr/sbin/tayga',
    logger: silentLogger,
    restart,
  });
const until = async (what: () => boolean) => {
  for (let i = 0; i < 200 && !what(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(what()).toBe(true);
};

describe("Tayga's configuration", () => {
  it('one directive a line, its own addresses from the pool and a ULA', () => {
    expect(taygaConfig(WKP, '/var/lib/flock/nat64').split('\n').slice(1)).toEqual([
      'tun-device flock64',
      'ipv4-addr 192.168.240.1',
      'ipv6-addr fd64:ff9b::1',
      'prefix 64:ff9b::/96',
      'dynamic-pool 192.168.240.0/20',
      'data-dir /var/lib/flock/nat64',
      '',
    ]);
    expect(() => taygaConfig(WKP, '/tmp/a b')).toThrow(/no spaces/);
    expect(translatorIpv4('10.0.0.0/28')).toBe('10.0.0.1');
  });

  it('routes the prefix, the pool and its own address to the device', () => {
    expect(tunCommands(NSP, '/c', '/usr/sbin/tayga').map((c) => c.flat().join(' '))).toEqual([
      '/usr/sbin/tayga --mktun -c /c',
      'ip link set flock64 up',
      'ip route replace 192.168.240.0/20 dev flock64',
      'ip -6 route replace 2001:db8:64::/96 dev flock64',
      'ip -6 route replace fd64:ff9b::1/128 dev flock64',
    ]);
  });

  it('embeds an IPv4 address in the /96 (RFC 6052)', () => {
    expect(nat64Address('64:ff9b::/96', '192.0.2.33')).toBe('64:ff9b::c000:221');
    expect(nat64Address('2001:db8:64::/96', '10.251.0.2')).toBe('2001:db8:64::afb:2');
    expect(() => nat64Address('64:ff9b::/64', '192.0.2.33')).toThrow(/no NAT64 address/);
    expect(() => nat64Address('64:ff9b::/96', '::1')).toThrow(/no NAT64 address/);
  });
});

describe('the NAT64 translator', () => {
  it('makes its device again when it is gone, restarting Tayga; leaves a present one alone', async () => {
    const edge = new FakeEdge();
    const t = translator(edge);
    await t.check(); // nothing converged yet: nothing to check
    await t.converge(WKP);
    await t.check();
    expect(edge.spawned()).toHaveLength(1);
    edge.devices.delete('flock64'); // someone ran `ip link del flock64`
    await t.check();
    expect(edge.devices.has('flock64')).toBe(true);
    expect(edge.spawned()).toHaveLength(2);
    expect(edge.live.size).toBe(1);
    expect(edge.commands.filter((c) => c.includes('route replace 64:ff9b::/96'))).toHaveLength(2);
    await t.converge(undefined); // off: no device, and none is made again
    await t.check();
    expect(edge.devices.has('flock64')).toBe(false);
    await t.stop();
  });

  it('starts Tayga once for a configuration and leaves it running on an unchanged one', async () => {
    const edge = new FakeEdge();
    const t = translator(edge);
    await t.converge(WKP);
    await t.converge({ ...WKP });
    expect(edge.spawned()).toEqual(['spawn /usr/sbin/tayga -c /var/lib/flock/nat64/tayga.conf -d']);
    expect(edge.files.get('/var/lib/flock/nat64/tayga.conf')).toContain('prefix 64:ff9b::/96');
    expect(edge.files.get('/var/lib/flock/nat64/tayga.pid')).toBe('100\n');
    expect(t.status()).toMatchObject({ running: true, restarts: 0 });
    await t.stop();
    expect(edge.live.size).toBe(0);
  });

  it('a new prefix or pool: the old Tayga stops and a fresh device carries no old route', async () => {
    const edge = new FakeEdge();
    const t = translator(edge);
    await t.converge(WKP);
    edge.commands.length = 0;
    await t.converge(NSP);
    expect(edge.commands[0]).toBe('ip link del flock64');
    expect(edge.commands).toContain('ip -6 route replace 2001:db8:64::/96 dev flock64');
    expect(edge.live.size).toBe(1);
    await t.stop();
  });

  it('runs nothing again for the same state: off stays off, cluster ranges do not restart Tayga', async () => {
    const edge = new FakeEdge();
    const t = translator(edge);
    await t.converge(undefined);
    await t.converge(undefined);
    expect(edge.commands).toEqual(['ip link del flock64']);
    await t.converge(WKP);
    const before = edge.commands.length;
    await t.converge({ ...WKP, clusterCIDRs: ['198.18.0.0/16'] } as typeof WKP);
    expect(edge.commands.length).toBe(before);
    expect(edge.live.size).toBe(1);
    await t.stop();
  });

  it('off: Tayga stops and its device goes', async () => {
    const edge = new FakeEdge();
    const t = translator(edge);
    await t.converge(WKP);
    await t.converge(undefined);
    expect(edge.live.size).toBe(0);
    expect(edge.commands.at(-1)).toBe('ip link del flock64');
    expect(t.status().running).toBe(false);
  });

  it('a Tayga that exits is started again after a backoff', async () => {
    const edge = new FakeEdge();
    const t = translator(edge);
    await t.converge(WKP);
    [...edge.live.values()][0]!.child.exit(1, null);
    await until(() => edge.live.size === 1 && t.status().restarts === 1);
    expect(edge.spawned()).toHaveLength(2);
    await t.stop();
  });

  it('a failed start is retried until it succeeds', async () => {
    const edge = new FakeEdge();
    edge.failing = /--mktun/;
    const t = translator(edge);
    await expect(t.converge(WKP)).rejects.toThrow(/failed/);
    edge.failing = undefined;
    await until(() => edge.live.size === 1);
    await t.stop();
  });

  it("stops the Tayga an earlier agent left (its pid file), and only a Tayga of this configuration's", async () => {
    const edge = new FakeEdge();
    const first = translator(edge);
    await first.converge(WKP);
    const [old] = [...edge.live.keys()];
    // The agent died without stopping: a new agent takes over.
    const second = translator(edge);
    await second.converge(WKP);
    expect(edge.live.has(old!)).toBe(false);
    expect(edge.live.size).toBe(1);
    // A pid file naming some other program: left alone.
    const other = edge.spawn('/usr/bin/sleep', ['1000']);
    edge.files.set('/var/lib/flock/nat64/tayga.pid', `${other.pid}\n`);
    await translator(edge).converge(NSP);
    expect(edge.live.has(other.pid)).toBe(true);
    await second.stop();
  });
});
