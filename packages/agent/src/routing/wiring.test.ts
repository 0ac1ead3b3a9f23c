import { describe, expect, it } from 'vitest';
import { loadAgentConfig } from '../core/config.js';
import { routingSettings } from './wiring.js';

describe('routing settings from the agent flags', () => {
  it('has production defaults', () => {
    const config = loadAgentConfig([], { NODE_NAME: 'n1' });
    expect(config).toMatchObject({
      birdConfigPath: '/run/flock/bird/bird.conf',
      birdSocketPath: '/run/bird/bird.ctl',
      namespace: 'flock-system',
    });
    expect(routingSettings(config)).toEqual({
      birdConfigPath: '/run/flock/bird/bird.conf',
      refreshPeriodMs: 30_000,
      anycastPeriodMs: 2_000,
      bgpStatusPeriodMs: 5_000,
      secretNamespace: 'flock-system',
      passwordFile: '/var/lib/flock/bgp-passwords.json',
      maxHostRoutes: 1000,
    });
  });

  it('reads the flags and POD_NAMESPACE', () => {
    const config = loadAgentConfig(
      [
        '--bird-config=/tmp/t/bird.conf',
        '--bird-socket',
        '/tmp/t/bird.ctl',
        '--router-id',
        '10.0.0.1',
        '--orphan-grace',
        '2s',
        '--sweep-period=5s',
        '--anycast-period=500ms',
        '--bgp-status-period=1s',
        '--store=/tmp/t/lib/allocations.json',
      ],
      { NODE_NAME: 'n1', POD_NAMESPACE: 'net' },
    );
    expect(config.birdSocketPath).toBe('/tmp/t/bird.ctl');
    expect(routingSettings(config)).toEqual({
      birdConfigPath: '/tmp/t/bird.conf',
      routerIdOverride: '10.0.0.1',
      refreshPeriodMs: 5000,
      anycastPeriodMs: 500,
      bgpStatusPeriodMs: 1000,
      secretNamespace: 'net',
      passwordFile: '/tmp/t/lib/bgp-passwords.json',
      maxHostRoutes: 1000,
    });
  });

  it('refuses a router ID that is not IPv4 and relative BIRD paths', () => {
    expect(() => loadAgentConfig(['--router-id', '2001:db8::1'], { NODE_NAME: 'n1' })).toThrow(
      /--router-id/,
    );
    expect(() => loadAgentConfig(['--bird-config', 'bird.conf'], { NODE_NAME: 'n1' })).toThrow(
      /--bird-config/,
    );
  });
});
