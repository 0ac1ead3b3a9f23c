import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { EventRecorder } from './events.js';
import { FakeApiServer } from '../../testing/fake-apiserver.js';
import { createMemoryLogger } from '../../testing/memory-logger.js';
import { EVENTS } from '../core/resource.js';

type Ev = {
  metadata: { name: string; namespace: string };
  regarding: Record<string, string>;
  reason: string;
  note: string;
  type: string;
  action: string;
  eventTime: string;
  reportingController: string;
  reportingInstance: string;
  series?: { count: number; lastObservedTime: string };
};

const pool = {
  apiVersion: 'flock.fritzlab.net/v1alpha1',
  kind: 'Pool',
  metadata: { name: 'dc1', uid: 'u1' },
};
const podRef = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'web-1', namespace: 'shop', uid: 'u2' },
};
const exhausted = {
  type: 'Warning' as const,
  reason: 'PoolExhausted',
  action: 'Allocate',
  note: 'no free /64 left',
};

let server: FakeApiServer;
let log: ReturnType<typeof createMemoryLogger>;
let recorder: EventRecorder;

beforeEach(() => {
  vi.useFakeTimers({ now: new Date('2025-01-01T00:00:00.000Z') });
  server = new FakeApiServer();
  log = createMemoryLogger();
  recorder = new EventRecorder({
    transport: server,
    reportingController: 'flock.fritzlab.net/operator',
    reportingInstance: 'operator-0',
    logger: log,
    aggregationWindowMs: 60_000,
  });
});
afterEach(() => vi.useRealTimers());

describe('EventRecorder', () => {
  it('writes an events.k8s.io/v1 Event; cluster-scoped subjects go to "default"', async () => {
    await recorder.event(pool, exhausted);
    const [e] = server.listObjects<Ev>(EVENTS);
    expect(e).toMatchObject({
      metadata: { namespace: 'default' },
      regarding: {
        apiVersion: 'flock.fritzlab.net/v1alpha1',
        kind: 'Pool',
        name: 'dc1',
        uid: 'u1',
      },
      type: 'Warning',
      reason: 'PoolExhausted',
      action: 'Allocate',
      note: 'no free /64 left',
      reportingController: 'flock.fritzlab.net/operator',
      reportingInstance: 'operator-0',
      eventTime: '2025-01-01T00:00:00.000000Z',
    });
    expect(e?.metadata.name).toMatch(/^dc1\.[0-9a-f]+$/);
    expect(e?.series).toBeUndefined();
    await recorder.event(podRef, {
      type: 'Normal',
      reason: 'AddressAssigned',
      action: 'Assign',
      note: 'x',
    });
    expect(
      server
        .listObjects<Ev>(EVENTS)
        .map((x) => x.metadata.namespace)
        .sort(),
    ).toEqual(['default', 'shop']);
  });

  it('aggregates the same event within the window into a series count', async () => {
    await recorder.event(pool, exhausted);
    await vi.advanceTimersByTimeAsync(10_000);
    await recorder.event(pool, exhausted);
    await recorder.event(pool, exhausted);
    const events = server.listObjects<Ev>(EVENTS);
    expect(events).toHaveLength(1);
    expect(events[0]?.series).toEqual({
      count: 3,
      lastObservedTime: '2025-01-01T00:00:10.000000Z',
    });
    expect(
      server.requests
        .filter((r) => r.method === 'PATCH')
        .every((r) => r.contentType === 'application/merge-patch+json'),
    ).toBe(true);
    await recorder.event(pool, { ...exhausted, note: 'something else' });
    expect(server.listObjects(EVENTS)).toHaveLength(2);
  });

  it('folds bursts into one more write while a write is in flight', async () => {
    const writes = () => server.requests.filter((r) => r.path.includes('/events')).length;
    const all = Array.from({ length: 5 }, () => recorder.event(pool, exhausted));
    await Promise.all(all);
    expect(writes()).toBe(2);
    expect(server.listObjects<Ev>(EVENTS)[0]?.series?.count).toBe(5);
  });

  it('starts a new Event after the window, or when the old one is gone', async () => {
    await recorder.event(pool, exhausted);
    await vi.advanceTimersByTimeAsync(61_000);
    await recorder.event(pool, exhausted);
    expect(server.listObjects(EVENTS)).toHaveLength(2);
    for (const e of server.listObjects<Ev>(EVENTS))
      server.deleteObject(EVENTS, e.metadata.name, e.metadata.namespace);
    await recorder.event(pool, exhausted); // its Event expired (TTL): recreate
    expect(server.listObjects<Ev>(EVENTS)).toMatchObject([{ series: { count: 2 } }]);
  });

  it('never throws: a failed write is logged', async () => {
    server.inject(() => new Error('apiserver down'));
    await expect(recorder.event(pool, exhausted)).resolves.toBeUndefined();
    expect(log.find('warn', 'could not record event')[0]?.meta['err']).toBe('apiserver down');
  });
});
