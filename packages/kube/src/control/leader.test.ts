import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { FakeClient } from '../../testing/fake-client.js';
import { FakeApiServer } from '../../testing/fake-apiserver.js';
import { LeaderElector } from './leader.js';
import { kubeLeaseStore } from './lease-store.js';
import { createMemoryLogger } from '../../testing/memory-logger.js';
import { LEASES } from '../core/resource.js';

const tick = (ms = 0) => vi.advanceTimersByTimeAsync(ms);
const LEASE_MS = 1500;
const DEADLINE_MS = 1000;
const RETRY_MS = 200;

interface Candidate {
  id: string;
  client: FakeClient;
  elector: LeaderElector;
  events: string[];
}

let server: FakeApiServer;
let candidates: Candidate[];

function candidate(id: string, onStopped?: () => Promise<void>): Candidate {
  const client = server.connect();
  const events: string[] = [];
  const elector = new LeaderElector({
    store: kubeLeaseStore(client, 'flock-system', 'flock-operator'),
    identity: id,
    leaseDurationMs: LEASE_MS,
    renewDeadlineMs: DEADLINE_MS,
    retryPeriodMs: RETRY_MS,
    logger: createMemoryLogger(),
    random: () => 0.5,
    onStartedLeading: (signal) => {
      events.push(`started@${Date.now()}`);
      signal.addEventListener('abort', () => events.push(`signal@${Date.now()}`));
    },
    onStoppedLeading: async () => {
      events.push(`stopped@${Date.now()}`);
      await onStopped?.();
    },
  });
  const c = { id, client, elector, events };
  candidates.push(c);
  return c;
}

const leaders = () => candidates.filter((c) => c.elector.isLeader()).map((c) => c.id);
const holder = () =>
  server.getObject<{ spec: { holderIdentity?: string; leaseTransitions?: number } }>(
    LEASES,
    'flock-operator',
    'flock-system',
  )?.spec;

/** Advance in small steps, checking that there is never more than one leader. */
async function run(ms: number, step = 10): Promise<void> {
  for (let t = 0; t < ms; t += step) {
    await tick(step);
    expect(leaders().length).toBeLessThanOrEqual(1);
  }
}

beforeEach(() => {
  vi.useFakeTimers();
  server = new FakeApiServer();
  candidates = [];
});
afterEach(async () => {
  for (const c of candidates) c.client.heal();
  await Promise.all(candidates.map((c) => c.elector.stop()));
  vi.useRealTimers();
});

describe('LeaderElector', () => {
  it('elects exactly one leader among several candidates', async () => {
    const cs = ['a', 'b', 'c'].map((id) => candidate(id));
    for (const c of cs) c.elector.start();
    await run(3000);
    expect(leaders()).toHaveLength(1);
    const [leader] = leaders();
    expect(holder()?.holderIdentity).toBe(leader);
    expect(cs.flatMap((c) => c.events).filter((e) => e.startsWith('started'))).toHaveLength(1);
    for (const c of cs) expect(c.elector.leader).toBe(leader);
  });

  it('a partitioned leader stops at renewDeadline; another takes over only after the lease expired', async () => {
    const a = candidate('a');
    a.elector.start();
    await tick();
    const b = candidate('b');
    b.elector.start();
    await run(1000);
    expect(leaders()).toEqual(['a']);
    const lastRenew = Math.max(
      ...server.requests.filter((r) => r.method === 'PUT' && r.at <= Date.now()).map((r) => r.at),
    );
    a.client.partition(); // its requests hang: only the deadline timer can end its leadership
    await run(DEADLINE_MS + 100);
    expect(a.elector.isLeader()).toBe(false);
    expect(a.events).toContain(`signal@${lastRenew + DEADLINE_MS}`);
    await run(LEASE_MS);
    expect(leaders()).toEqual(['b']);
    expect(holder()).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
    const bStart = Number(b.events[0]?.split('@')[1]);
    expect(bStart - lastRenew).toBeGreaterThanOrEqual(LEASE_MS);
  });

  it('a leader that cannot reach the API server stops leading', async () => {
    const a = candidate('a');
    a.elector.start();
    await tick();
    expect(a.elector.isLeader()).toBe(true);
    a.client.disconnect();
    await tick(DEADLINE_MS - 1);
    expect(a.elector.isLeader()).toBe(true);
    await tick(RETRY_MS);
    expect(a.elector.isLeader()).toBe(false);
    expect(a.events.map((e) => e.split('@')[0])).toEqual(['started', 'signal', 'stopped']);
    a.client.heal(); // it still holds the lease: it leads again on its next attempt
    await tick(2 * RETRY_MS);
    expect(a.elector.isLeader()).toBe(true);
  });

  it('stops at once when the lease shows another holder', async () => {
    const a = candidate('a');
    a.elector.start();
    await tick();
    const lease = server.getObject<{ spec: Record<string, unknown> }>(
      LEASES,
      'flock-operator',
      'flock-system',
    );
    server.putObject(LEASES, {
      ...lease,
      spec: { ...lease?.spec, holderIdentity: 'intruder' },
    } as never);
    await tick(RETRY_MS);
    expect(a.elector.isLeader()).toBe(false);
    expect(a.elector.leader).toBe('intruder');
  });

  it('releases the lease on stop after onStoppedLeading finished, so a standby takes over fast', async () => {
    let finishStopping!: () => void;
    const a = candidate('a', () => new Promise<void>((r) => (finishStopping = r)));
    a.elector.start();
    await tick();
    const b = candidate('b');
    b.elector.start();
    await run(1000);
    const stopping = a.elector.stop();
    await tick(100);
    expect(a.elector.isLeader()).toBe(false);
    expect(holder()?.holderIdentity).toBe('a'); // not released while a is still stopping
    finishStopping();
    await stopping;
    expect(holder()?.holderIdentity).toBe('');
    const released = Date.now();
    await run(2 * RETRY_MS);
    expect(leaders()).toEqual(['b']);
    expect(Number(b.events[0]?.split('@')[1]) - released).toBeLessThan(LEASE_MS / 2);
  });

  it('refuses inconsistent timings', () => {
    expect(
      () =>
        new LeaderElector({
          store: kubeLeaseStore(server, 'ns', 'l'),
          identity: 'a',
          leaseDurationMs: 1000,
          renewDeadlineMs: 2000,
          logger: createMemoryLogger(),
          onStartedLeading: () => {},
        }),
    ).toThrow(/leaseDuration > renewDeadline/);
  });
});
