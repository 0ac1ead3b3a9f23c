import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { agentUsage, loadAgentConfig } from './config.js';
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
    expect(() => loadAgentConfig(['--watchdog', '10ms'], { NODE_NAME: 'n' })).toThrow(/watchdogMs/);
  });

  it('names every bad setting', () => {
    expect(() => loadAgentConfig(['--resync', 'soon'], {})).toThrow(
      /nodeName.*resyncMs|resyncMs.*nodeName/s,
    );
    expect(() => loadAgentConfig(['--bogus', '1'], { NODE_NAME: 'n' })).toThrow(
      /unknown flag --bogus/,
    );
    expect(() => loadAgentConfig(['--socket'], { NODE_NAME: 'n' })).toThrow(
      /--socket needs a value/,
    );
    expect(() => loadAgentConfig(['--socket', 'relative.sock'], { NODE_NAME: 'n' })).toThrow(
      /socketPath/,
    );
  });

  it('--help lists every flag with its default and environment variables', () => {
    const usage = agentUsage();
    expect(usage).toMatch(/^usage: flock-agent /);
    for (const flag of ['--node-name', '--socket', '--watchdog', '--bird-socket', '--namespace'])
      expect(usage).toMatch(new RegExp(`^  ${flag} `, 'm'));
    expect(usage).toMatch(/^ {2}--node-name +required; or \$FLOCK_NODE_NAME, \$NODE_NAME$/m);
    expect(usage).toMatch(/^ {2}--watchdog +default 3m$/m);
    expect(usage).toMatch(/^ {2}--node-config-timeout +default 10m$/m);
    expect(usage).toMatch(/^ {2}--socket +default \/run\/flock\/cni\.sock; or \$FLOCK_SOCKET$/m);
    expect(usage).toMatch(/^ {2}--test-faults +or \$FLOCK_TEST_FAULTS; TEST ONLY/m);
    expect(usage).toMatch(/^ {2}--version /m);
  });

  it('--version is the package version', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    expect(agentVersion()).toBe(pkg.version);
    expect(agentVersion()).toMatch(/^\d+\.\d+\.\d+/);
  });
});
