// Which peer slices of a namespace to write so they hold exactly its peers. Records stay in the
// slice they are in (an agent receives only the slices that changed, and one pod's change
// rewrites one slice); a pod that is gone leaves its slice, a new one fills a slice that is
// being rewritten anyway (an emptied one too), then one with room, then new slices; a slice left
// empty is deleted.
// Slices are bounded by count (MAX_SLICE_PEERS) and by size (an object must stay far below
// etcd's 1.5 MiB: 100 pods with 64 long labels each would not).
import { createHash } from 'node:crypto';
import { MAX_SLICE_PEERS, type PeerPod } from '@flock/api';

/** The most bytes of records a slice holds (their JSON). */
export const MAX_SLICE_BYTES = 256 * 1024;

/**
 * A record as a written slice is remembered: its pod's name and a digest of its JSON (what
 * tells a changed record from the same one). At 150,000 pods the slices' records whole cost the
 * operator ≈ 100 MiB of heap beside the pod cache's own; these ≈ 15.
 */
export interface SliceEntry {
  name: string;
  key: string;
}

const KEYS = new WeakMap<PeerPod, string>();

/** A record's digest (128 bits of SHA-256 of its JSON), kept per record object. */
export function recordKey(p: PeerPod): string {
  let key = KEYS.get(p);
  if (key === undefined) {
    key = createHash('sha256').update(JSON.stringify(p)).digest('base64').slice(0, 22);
    KEYS.set(p, key);
  }
  return key;
}

export const sliceEntry = (p: PeerPod): SliceEntry => ({ name: p.name, key: recordKey(p) });

export interface ExistingSlice {
  name: string;
  peers: readonly SliceEntry[];
}

export interface SlicePlan {
  /** Existing slices to write with these peers. */
  update: { name: string; peers: PeerPod[] }[];
  /** New slices. */
  create: PeerPod[][];
  /** Existing slices to delete (nothing left in them). */
  remove: string[];
}

interface Draft {
  name: string;
  peers: PeerPod[];
  bytes: number;
  changed: boolean;
}

const size = (p: PeerPod) => JSON.stringify(p).length;
const fits = (d: { peers: readonly PeerPod[]; bytes: number }, bytes: number) =>
  d.peers.length < MAX_SLICE_PEERS && (d.peers.length === 0 || d.bytes + bytes <= MAX_SLICE_BYTES);

/** The writes that make `existing` hold exactly `desired` (by pod name). */
export function planSlices(
  existing: readonly ExistingSlice[],
  desired: ReadonlyMap<string, PeerPod>,
): SlicePlan {
  const placed = new Set<string>();
  const drafts: Draft[] = [...existing]
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .map((slice) => {
      const peers: PeerPod[] = [];
      let changed = false;
      for (const peer of slice.peers) {
        const want = desired.get(peer.name);
        // Gone, or already kept in another slice (two slices named it after a lost write).
        if (!want || placed.has(peer.name)) {
          changed = true;
          continue;
        }
        placed.add(peer.name);
        if (peer.key !== recordKey(want)) changed = true;
        peers.push(want);
      }
      return { name: slice.name, peers, bytes: peers.reduce((n, p) => n + size(p), 0), changed };
    });
  const fresh = [...desired.values()]
    .filter((p) => !placed.has(p.name))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const created: Draft[] = [];
  for (const peer of fresh) {
    const bytes = size(peer);
    const into =
      drafts.find((d) => d.changed && fits(d, bytes)) ??
      drafts.find((d) => fits(d, bytes)) ??
      created.find((d) => fits(d, bytes));
    if (into) {
      into.peers.push(peer);
      into.bytes += bytes;
      into.changed = true;
    } else created.push({ name: '', peers: [peer], bytes, changed: true });
  }
  return {
    update: drafts
      .filter((d) => d.changed && d.peers.length > 0)
      .map((d) => ({ name: d.name, peers: d.peers })),
    create: created.map((d) => d.peers),
    remove: drafts.filter((d) => d.peers.length === 0).map((d) => d.name),
  };
}
