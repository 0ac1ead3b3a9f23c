import { createMemoryLogger } from '@flock/kube/testing';
import type { AllocationEntry } from '../store/index.js';
import type { Pod } from '@flock/api';
import { beforeEach, describe, expect, it } from 'vitest';
import { entry, pod } from '../../testing/routing-fixtures.js';
import { hostVethName } from '../datapath/index.js';
import { OrphanSweeper, type OrphanSweepDeps } from './orphan-sweep.js';

const T0 = Date.parse('2026-11-29T10:00:00.000Z');
const GRACE = 10_000;

let entries: Map<string, AllocationEntry>;
let cache: Map<string, Pod>;
let api: Map<string, Pod>;
let apiDown: boolean;
let gets: string[];
let undone: string[];
let now: number;

function sweeper(over: Partial<OrphanSweepDeps> = {}) {
  return new OrphanSweeper({
    entries: () => [...entries.values()],
    current: (e) => entries.get(e.containerID),
    podOf: (ns, name) => cache.get(`${ns}/${name}`),
    fetchPod: async (ns, name) => {
      gets.push(name);
      if (apiDown) throw new Error('connect ECONNREFUSED');
      return api.get(`${ns}/${name}`);
    },
    undo: async (e) => {
      undone.push(e.pod);
      entries.delete(e.containerID);
    },
    graceMs: GRACE,
    now: () => now,
    logger: createMemoryLogger(),
    ...over,
  });
}

const add = (e: AllocationEntry) => entries.set(e.containerID, e);
const both = (p: Pod) => {
  cache.set(`default/${p.metadata.name}`, p);
  api.set(`default/${p.metadata.name}`, p);
};

beforeEach(() => {
  entries = new Map();
  cache = new Map();
  api = new Map();
  apiDown = false;
  gets = [];
  undone = [];
  now = T0 + 60_000;
});

describe('orphan sweep', () => {
  it('keeps live pods without asking the API server', async () => {
    add(entry('web'));
    both(pod('web'));
    const r = await sweeper().sweep('test');
    expect(r.removed).toEqual([]);
    expect(gets).toEqual([]);
  });

  it('removes an allocation whose pod is gone from the cache and from the API server', async () => {
    add(entry('gone'));
    const r = await sweeper().sweep('test');
    expect(undone).toEqual(['gone']);
    expect(r.removed.map((x) => x.reason)).toEqual(['absent']);
  });

  it('removes an allocation whose pod name was reused by a new pod (another UID)', async () => {
    add(entry('web'));
    both(pod('web', { uid: 'the-new-pod' }));
    const r = await sweeper().sweep('test');
    expect(undone).toEqual(['web']);
    expect(r.removed.map((x) => x.reason)).toEqual(['uid-differs']);
  });

  it('removes an allocation whose pod has terminated', async () => {
    add(entry('job'));
    both(pod('job', { phase: 'Succeeded' }));
    expect((await sweeper().sweep('test')).removed.map((x) => x.reason)).toEqual(['terminated']);
  });

  it('leaves entries younger than the grace period alone and says when to look again', async () => {
    now = T0 + 4_000;
    add(entry('just-added'));
    const r = await sweeper().sweep('test');
    expect(undone).toEqual([]);
    expect(gets).toEqual([]);
    expect(r).toMatchObject({ deferred: 1, nextEligibleAt: T0 + GRACE });
    now = T0 + GRACE;
    expect((await sweeper().sweep('test')).removed).toHaveLength(1);
  });

  it('keeps an entry the cache has not seen when the API server has the pod (the cache lags)', async () => {
    add(entry('web'));
    api.set('default/web', pod('web'));
    const r = await sweeper().sweep('test');
    expect(r).toMatchObject({ keptByApi: 1, removed: [] });
    expect(gets).toEqual(['web']);
  });

  it('keeps the entry when the API server cannot be asked', async () => {
    add(entry('web'));
    apiDown = true;
    const r = await sweeper().sweep('test');
    expect(r).toMatchObject({ errors: 1, removed: [] });
    expect(undone).toEqual([]);
  });

  it('leaves pending entries (an ADD in flight) and entries replaced meanwhile alone', async () => {
    add(entry('adding', { state: 'pending' }));
    add(entry('raced'));
    const s = sweeper({
      // A DEL and a new ADD ran between the listing and the removal.
      current: (e) =>
        e.pod === 'raced'
          ? { ...e, createdAt: '2026-11-29T10:05:00.000Z' }
          : entries.get(e.containerID),
    });
    expect((await s.sweep('test')).removed).toEqual([]);
    expect(undone).toEqual([]);
  });

  it('goes on with the other entries when one teardown fails', async () => {
    add(entry('a'));
    add(entry('b'));
    const s = sweeper({
      undo: async (e) => {
        if (e.pod === 'a') throw new Error('netlink busy');
        undone.push(e.pod);
      },
    });
    const r = await s.sweep('test');
    expect(undone).toEqual(['b']);
    expect(r.errors).toBe(1);
  });

  it('retries a teardown that failed half-way (a marked entry), whatever its pod, until it is done', async () => {
    const pod = { metadata: { name: 'half', namespace: 'default', uid: 'uid-half' } } as Pod;
    both(pod); // the pod is even live again: the teardown was decided, it is finished
    add(entry('half', { state: 'pending', removing: true, podUID: 'uid-half' }));
    let fail = true;
    const s = sweeper({
      undo: async (e) => {
        if (fail) throw new Error('netlink busy');
        undone.push(e.pod);
        entries.delete(e.containerID);
      },
    });
    expect((await s.sweep('test')).errors).toBe(1);
    fail = false;
    const r = await s.sweep('test');
    expect(r.removed.map((x) => [x.entry.pod, x.reason])).toEqual([['half', 'teardown-retry']]);
    expect(undone).toEqual(['half']);
    expect(gets).toEqual([]); // nothing to ask the API server
  });

  it("removes a live pod's attachment whose sandbox is gone (no veth), after the grace; not when the veth is there", async () => {
    const live = { metadata: { name: 'p', namespace: 'default', uid: 'uid-p' } } as Pod;
    both(live);
    add(entry('p', { containerID: 'old-sandbox', podUID: 'uid-p' }));
    add(entry('p', { containerID: 'new-sandbox', podUID: 'uid-p' }));
    add(
      entry('p', {
        containerID: 'young',
        podUID: 'uid-p',
        createdAt: new Date(now - 1_000).toISOString(),
      }),
    );
    const present = new Set([hostVethName('new-sandbox', 'eth0')]);
    const r = await sweeper({ hostVeths: async () => present }).sweep('test');
    expect(r.removed.map((x) => [x.entry.containerID, x.reason])).toEqual([
      ['old-sandbox', 'sandbox-gone'],
    ]);
    expect(gets).toEqual([]);
    // The veths cannot be listed: nothing is removed for it, the sweep goes on.
    const failing = await sweeper({ hostVeths: () => Promise.reject(new Error('netlink')) }).sweep(
      'test',
    );
    expect(failing.removed).toEqual([]);
    expect(failing.errors).toBe(1);
  });
});
