import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { NODE_DAEMON_PORTS } from '@flock/api';
import { AGENT_FLAGS, loadAgentConfig, reservedHostPorts } from './config.js';
import { agentVersion } from './version.js';

describe('agent settings', () => {
  it('reads flags over environment over defaults', () => {
    const c = loadAgentConfig(['--node-config-timeout', '30s', '--log-level=debug'], {
      NODE_NAME: 'n1',
      FLOCK_SOCKET: '/run/x.sock',
    });
    expect(c).toMatchObject({
      nodeName: 'n1',
      socketPath: '/run/x.sock',
      nodeConfigTimeoutMs: 30_000,
      logLevel: 'debug',
      storePath: '/var/lib/flock/allocations.json',
    });
  });

  it('restarts silent watches after --watchdog (default 3 minutes, at least 1 s)', () => {
    expect(loadAgentConfig([], { NODE_NAME: 'n' }).watchdogMs).toBe(180_000);
    expect(loadAgentConfig(['--watchdog', '10s'], { NODE_NAME: 'n' }).watchdogMs).toBe(10_000);
    expect(() => loadAgentConfig(['--watchdog', '10ms'], { NODE_NAME: 'n' })).toThrow(
      /--watchdog: must be at least 1s/,
    );
  });

  it('--address-quarantine-share is a fraction in (0, 1] (default a quarter)', () => {
    const share = (...args: string[]) =>
      loadAgentConfig(args, { NODE_NAME: 'n' }).addressQuarantineShare;
    expect(share()).toBe(0.25);
    expect(share('--address-quarantine-share', '0.5')).toBe(0.5);
    expect(share('--address-quarantine-share', '1')).toBe(1);
    for (const bad of ['0', '1.5', '-0.1', 'half', ''])
      expect(() => share('--address-quarantine-share', bad), bad).toThrow(
        /--address-quarantine-share/,
      );
  });

  it('--peer-relay is NAMESPACE/NAME of the relay Service (default off)', () => {
    const relay = (...args: string[]) => loadAgentConfig(args, { NODE_NAME: 'n' }).peerRelay;
    expect(relay()).toBeUndefined();
    expect(relay('--peer-relay', 'flock-system/flock-peer-relay')).toEqual({
      namespace: 'flock-system',
      service: 'flock-peer-relay',
    });
    for (const bad of ['flock-peer-relay', 'a/b/c', 'Flock/x', '/x', 'x/'])
      expect(() => relay('--peer-relay', bad), bad).toThrow(/--peer-relay/);
  });

  it('--peer-pod-ranges is a comma-separated list of CIDRs (default none)', () => {
    const ranges = (...args: string[]) => loadAgentConfig(args, { NODE_NAME: 'n' }).peerPodRanges;
    expect(ranges()).toEqual([]);
    expect(ranges('--peer-pod-ranges', '2001:db8:f0::/48, 10.0.0.0/8')).toEqual([
      '2001:db8:f0::/48',
      '10.0.0.0/8',
    ]);
    for (const bad of ['10.0.0.1', '10.0.0.1/8', 'pods'])
      expect(() => ranges('--peer-pod-ranges', bad), bad).toThrow(/--peer-pod-ranges/);
  });

  it("--reserved-host-ports: PORT/PROTOCOL or FIRST-LAST/PROTOCOL, comma-separated (default none); with the daemons' and --health-port, what no hostPort may take", () => {
    const load = (...args: string[]) => loadAgentConfig(args, { NODE_NAME: 'n' });
    expect(load().reservedHostPorts).toEqual([]);
    expect(load('--reserved-host-ports', '22/tcp, 30000-32767/UDP').reservedHostPorts).toEqual([
      {
        protocol: 'tcp',
        first: 22,
        last: 22,
        owner: expect.stringContaining('--reserved-host-ports'),
      },
      { protocol: 'udp', first: 30000, last: 32767, owner: expect.any(String) },
    ]);
    for (const bad of ['22', '22/icmp', '0/tcp', '9-8/tcp'])
      expect(() => load('--reserved-host-ports', bad), bad).toThrow(/--reserved-host-ports: "/);
    const reserved = (...args: string[]) =>
      reservedHostPorts(load(...args)).map((r) => `${r.first}-${r.last}/${r.protocol}`);
    expect(reserved()).toEqual([
      '179-179/tcp',
      '3784-3784/udp',
      '4784-4784/udp',
      '10250-10250/tcp',
      '10248-10248/tcp',
      '10255-10255/tcp',
      '9901-9901/tcp',
    ]);
    expect(reserved('--health-port', '0', '--reserved-host-ports', '22/tcp')).toEqual([
      ...NODE_DAEMON_PORTS.map((r) => `${r.first}-${r.last}/${r.protocol}`),
      '22-22/tcp',
    ]);
  });

  it('names every bad setting', () => {
    expect(() => loadAgentConfig(['--resync', 'soon'], {})).toThrow(
      /--node-name.*--resync|--resync.*--node-name/s,
    );
    expect(() => loadAgentConfig(['--bogus', '1'], { NODE_NAME: 'n' })).toThrow(
      /unknown flag --bogus/,
    );
    expect(() => loadAgentConfig(['--socket'], { NODE_NAME: 'n' })).toThrow(
      /--socket needs a value/,
    );
    expect(() => loadAgentConfig(['--socket', 'relative.sock'], { NODE_NAME: 'n' })).toThrow(
      /--socket/,
    );
  });

  it('the BFD speaker flags come as a pair', () => {
    const env = { NODE_NAME: 'n' };
    expect(loadAgentConfig([], env).bfdConfigPath).toBeUndefined();
    expect(() => loadAgentConfig(['--bfd-config', '/run/flock/bfd/bfd.conf'], env)).toThrow(
      /--bfd-config and --bfd-socket go together/,
    );
    expect(() => loadAgentConfig(['--bfd-socket', '/run/flock/bfd/bird.ctl'], env)).toThrow(
      /go together/,
    );
    const both = [
      '--bfd-config',
      '/run/flock/bfd/bfd.conf',
      '--bfd-socket',
      '/run/flock/bfd/b.ctl',
    ];
    expect(loadAgentConfig(both, env)).toMatchObject({
      bfdConfigPath: '/run/flock/bfd/bfd.conf',
      bfdSocketPath: '/run/flock/bfd/b.ctl',
    });
  });

  it('--help lists every flag with its default and environment variables', () => {
    const usage = AGENT_FLAGS.usage();
    expect(usage).toMatch(/^usage: flock-agent /);
    for (const flag of ['--node-name', '--socket', '--watchdog', '--bird-socket', '--namespace'])
      expect(usage).toMatch(new RegExp(`^  ${flag} `, 'm'));
    expect(usage).toMatch(/^ {2}--node-name NAME +.*required \(or \$NODE_NAME\)$/m);
    expect(usage).toMatch(/^ {2}--watchdog DURATION +.* \(default 3m\)$/m);
    expect(usage).toMatch(/^ {2}--node-config-timeout DURATION +.* \(default 10m\)$/m);
    expect(usage).toMatch(/^ {2}--socket PATH +.* \(default \/run\/flock\/cni\.sock\)$/m);
    expect(usage).toMatch(/^ {2}--test-faults POINTS +TEST ONLY/m);
    expect(usage).toMatch(/^ {2}--version /m);
    expect(usage).toMatch(/^Every flag can also be set as FLOCK_<FLAG>/m);
  });

  it('reads every flag from FLOCK_<FLAG> too', () => {
    const c = loadAgentConfig([], {
      FLOCK_NODE_NAME: 'n2',
      FLOCK_WATCHDOG: '1m30s',
      FLOCK_BIRD_SOCKET: '/b.ctl',
      FLOCK_HEALTH_PORT: '0',
    });
    expect(c).toMatchObject({
      nodeName: 'n2',
      watchdogMs: 90_000,
      birdSocketPath: '/b.ctl',
      healthPort: 0,
    });
  });

  it('--version is the package version', () => {
    const pkg = JSON.parse(
      readFileSync(new URL('../../package.json', import.meta.url), 'utf8'),
    ) as {
      version: string;
    };
    expect(agentVersion()).toBe(pkg.version);
    expect(agentVersion()).toMatch(/^\d+\.\d+\.\d+/);
  });
});
