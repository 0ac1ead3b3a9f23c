import { describe, expect, it } from 'vitest';
import { UsageError } from '@flock/kube';
import { parseOptions } from './options.js';

const NO_SA = '/nonexistent/namespace';

describe('parseOptions', () => {
  it('has defaults for everything, the identity from POD_NAME and the namespace from POD_NAMESPACE', () => {
    const o = parseOptions([], { POD_NAME: 'flock-operator-7d9f', POD_NAMESPACE: 'flock' }, NO_SA);
    expect(o).toMatchObject({
      identity: 'flock-operator-7d9f',
      namespace: 'flock',
      leaderElect: true,
      leaseName: 'flock-operator',
      leaseDuration: 15_000,
      renewDeadline: 10_000,
      retryPeriod: 2_000,
      healthPort: 8080,
      logLevel: 'info',
      prefixQuarantine: 86_400_000,
      concurrency: 16,
      workers: 2,
      watchdog: 300_000,
    });
    expect(o.kubeconfig).toBeUndefined();
  });

  it('takes flags over FLOCK_ environment variables over defaults', () => {
    const o = parseOptions(
      [
        '--lease-name',
        'from-flag',
        '--no-leader-elect',
        '--prefix-quarantine=1h',
        '--health-port=0',
      ],
      { FLOCK_LEASE_NAME: 'from-env', FLOCK_CONCURRENCY: '4', FLOCK_KUBECONFIG: '/k' },
      NO_SA,
    );
    expect(o).toMatchObject({
      leaseName: 'from-flag',
      leaderElect: false,
      prefixQuarantine: 3_600_000,
      healthPort: 0,
      concurrency: 4,
      kubeconfig: '/k',
    });
    expect(parseOptions(['--leader-elect=false'], {}, NO_SA).leaderElect).toBe(false);
    expect(
      parseOptions(['--leader-elect'], { FLOCK_LEADER_ELECT: 'false' }, NO_SA).leaderElect,
    ).toBe(true);
  });

  it('refuses bad values with the flag named', () => {
    const problems = (args: string[]) => {
      try {
        parseOptions(args, {}, NO_SA);
        return '';
      } catch (err) {
        expect(err).toBeInstanceOf(UsageError);
        return (err as Error).message;
      }
    };
    expect(problems(['--concurrency', '0'])).toContain('--concurrency: must be at least 1');
    expect(problems(['--prefix-quarantine', 'soon'])).toContain('"soon" is not a duration');
    expect(problems(['--namespace', 'Not_A_Label'])).toContain('--namespace');
    expect(problems(['--log-level', 'loud'])).toContain('--log-level');
    expect(problems(['--leader-elect=maybe'])).toContain('--leader-elect: must be true or false');
    expect(problems(['--bogus'])).toContain('unknown flag --bogus');
    expect(problems(['--lease-duration=5s', '--renew-deadline=10s'])).toContain(
      '--lease-duration > --renew-deadline',
    );
  });
});
