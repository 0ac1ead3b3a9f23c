import { describe, expect, it } from 'vitest';
import { loadAgentConfig } from './config.js';

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
});
