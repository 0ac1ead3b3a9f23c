import { MAX_SLICE_PEERS, type PeerPod } from '@flock/api';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  MAX_SLICE_BYTES,
  planSlices,
  recordKey,
  sliceEntry,
  type ExistingSlice,
  type SliceEntry,
} from './pack.js';

const peer = (name: string, extra: Partial<PeerPod> = {}): PeerPod => ({
  name,
  uid: `uid-${name}`,
  node: 'n1',
  ips: ['2001:db8::1'],
  ...extra,
});
const desired = (...ps: PeerPod[]) => new Map(ps.map((p) => [p.name, p]));
const names = (ps: readonly PeerPod[]) => ps.map((p) => p.name);
/** A written slice as the publisher's cache holds it. */
const slice = (name: string, ...ps: PeerPod[]): ExistingSlice => ({
  name,
  peers: ps.map(sliceEntry),
});

/** The slices after a plan is carried out (as the cache would then hold them). */
function after(existing: readonly ExistingSlice[], plan: ReturnType<typeof planSlices>) {
  const out = new Map<string, SliceEntry[]>(existing.map((s) => [s.name, [...s.peers]]));
  for (const u of plan.update) out.set(u.name, u.peers.map(sliceEntry));
  for (const r of plan.remove) out.delete(r);
  plan.create.forEach((peers, i) => out.set(`new-${i}`, peers.map(sliceEntry)));
  return out;
}

describe('planSlices', () => {
  it('writes nothing when the slices hold exactly the pods', () => {
    // Another object with the same content (as parsed from the API server): the same record.
    const plan = planSlices([slice('s1', peer('a'))], desired(peer('a')));
    expect(plan).toEqual({ update: [], create: [], remove: [] });
    expect(recordKey(peer('a'))).not.toBe(recordKey(peer('a', { phase: 'Running' })));
  });

  it('rewrites only the slice of a changed pod, and keeps every other record where it is', () => {
    const existing = [slice('s1', peer('a'), peer('b')), slice('s2', peer('c'))];
    const plan = planSlices(
      existing,
      desired(peer('a'), peer('b', { labels: { app: 'x' } }), peer('c')),
    );
    expect(plan.create).toEqual([]);
    expect(plan.remove).toEqual([]);
    expect(plan.update).toEqual([
      { name: 's1', peers: [peer('a'), peer('b', { labels: { app: 'x' } })] },
    ]);
  });

  it('puts a new pod into a slice being rewritten anyway, deletes a slice left empty', () => {
    const existing = [slice('s1', peer('a')), slice('s2', peer('b')), slice('s3', peer('c'))];
    // b changes, c is gone, d is new.
    const plan = planSlices(
      existing,
      desired(peer('a'), peer('b', { phase: 'Running' }), peer('d')),
    );
    expect(plan.update).toHaveLength(1);
    expect(plan.update[0]?.name).toBe('s2');
    expect(names(plan.update[0]?.peers ?? [])).toEqual(['b', 'd']);
    expect(plan.remove).toEqual(['s3']);
    expect(plan.create).toEqual([]);
  });

  it('drops the second copy of a pod two slices name', () => {
    const plan = planSlices(
      [slice('s1', peer('a')), slice('s2', peer('a'), peer('b'))],
      desired(peer('a'), peer('b')),
    );
    expect(plan.update).toEqual([{ name: 's2', peers: [peer('b')] }]);
  });

  it('fills new slices up to the count bound', () => {
    const all = Array.from({ length: 2 * MAX_SLICE_PEERS + 1 }, (_, i) => peer(`p${i}`));
    const plan = planSlices([], desired(...all));
    expect(plan.create.map((c) => c.length)).toEqual([MAX_SLICE_PEERS, MAX_SLICE_PEERS, 1]);
  });

  it('keeps a slice under the size bound however long the labels', () => {
    const labels = Object.fromEntries(
      Array.from({ length: 64 }, (_, i) => [`example.com/${'k'.repeat(240)}${i}`, 'v'.repeat(63)]),
    );
    const all = Array.from({ length: 60 }, (_, i) => peer(`p${i}`, { labels }));
    const plan = planSlices([], desired(...all));
    expect(plan.create.length).toBeGreaterThan(1);
    for (const s of plan.create)
      expect(JSON.stringify(s).length).toBeLessThan(MAX_SLICE_BYTES + 1024);
  });

  it('always ends with every desired pod in exactly one slice, each slice within bounds', () => {
    const pods = fc.uniqueArray(
      fc.record({ n: fc.integer({ min: 0, max: 400 }), v: fc.integer({ min: 0, max: 2 }) }),
      { selector: (r) => r.n, maxLength: 300 },
    );
    fc.assert(
      fc.property(pods, pods, fc.integer({ min: 1, max: 4 }), (before, now, split) => {
        const toPeer = (r: { n: number; v: number }) => peer(`p${r.n}`, { phase: `v${r.v}` });
        // Existing slices: the "before" pods dealt into `split` slices.
        const existing: ExistingSlice[] = Array.from({ length: split }, (_, i) =>
          slice(`s${i}`, ...before.filter((_, j) => j % split === i).map(toPeer)),
        ).filter((s) => s.peers.length <= MAX_SLICE_PEERS);
        const want = desired(...now.map(toPeer));
        const result = after(existing, planSlices(existing, want));
        const held = [...result.values()].flat();
        expect(held.map((p) => p.name).sort()).toEqual([...want.keys()].sort());
        // Every slice holds each pod's current record, rewritten or not.
        for (const p of held) expect(p.key).toBe(recordKey(want.get(p.name) as PeerPod));
        for (const peers of result.values()) {
          expect(peers.length).toBeGreaterThan(0);
          expect(peers.length).toBeLessThanOrEqual(MAX_SLICE_PEERS);
        }
      }),
    );
  });
});
