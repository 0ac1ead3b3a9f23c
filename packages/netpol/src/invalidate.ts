// Which cached set contents a change makes stale. A peer set holds the addresses of the live pods
// its selector peers select (ipBlocks depend on nothing); a named-port tuple set also holds every
// live pod when it has no peers, and the pods inside its ipBlocks. So a pod change touches only
// the sets that select the pod before or after it changed, and a namespace change only the sets
// whose namespaceSelector matches its labels before or after. Everything else is kept.
import { matchesSelector, type Family } from '@flock/api';
import { contains } from './addresses.js';
import type { Cluster, ClusterChanges, PodInfo } from './cluster.js';
import { extendPeers, shrinkPeers, type SetCache, type SetSource } from './sets.js';
import type { Peer } from './state.js';
import { blockIntervals, visitSource } from './translator.js';
import { POD_RANGES_KEY } from './unknown-peers.js';

function inBlock(peer: Peer, pod: PodInfo): boolean {
  const block = blockIntervals(peer);
  return (
    block !== undefined &&
    pod.addresses.some(
      (a) =>
        a.family === block.family &&
        block.intervals.some((iv) => contains(iv, { lo: a.n, hi: a.n })),
    )
  );
}

/** Does a set built from `source` change when `pod` comes or goes? */
function dependsOnPod(
  source: SetSource,
  pod: PodInfo,
  namespaceLabels: (ns: string) => Record<string, string> | undefined,
  tuples: boolean,
): boolean {
  if (!pod.live) return false;
  if (tuples && source.peers.length === 0) return true; // every pod is a destination
  return source.peers.some((peer) => {
    if (peer.ipBlock) return tuples && inBlock(peer, pod);
    const inNamespace = peer.namespaceSelector
      ? matchesSelector(peer.namespaceSelector, namespaceLabels(pod.namespace) ?? {})
      : pod.namespace === source.namespace;
    return inNamespace && matchesSelector(peer.podSelector ?? undefined, pod.labels);
  });
}

function dependsOnNamespace(source: SetSource, labels: Record<string, string>): boolean {
  return source.peers.some(
    (peer) => peer.namespaceSelector != null && matchesSelector(peer.namespaceSelector, labels),
  );
}

/** Above this many (change × set) tests, invalidate() drops the whole cache instead. */
const MAX_TESTS = 200_000;

/** Above this many addresses a set may lose in one change, it is computed again instead. */
const MAX_LOST = 64;

type Addresses = Record<Family, Set<bigint>>;

/**
 * Of `candidates`, the addresses the set built from `source` no longer holds in `cluster`'s
 * current state: what visitSource, which computing the set again reads too, does not tell (a
 * pod's address may be another's too: a hostNetwork pod, a reused address). `candidates` is
 * emptied of what stays; selected pods are walked only while some are left.
 */
function released(
  cluster: Pick<Cluster, 'selectPeerPods'>,
  source: SetSource,
  candidates: Addresses,
): Addresses {
  visitSource(cluster, source, {
    fixed: (addresses) => {
      for (const a of addresses) candidates[a.family].delete(a.n);
    },
    block: (family, intervals) => {
      for (const n of candidates[family])
        if (intervals.some((iv) => contains(iv, { lo: n, hi: n }))) candidates[family].delete(n);
    },
    pods: (pods) => {
      for (const pod of pods) for (const a of pod.addresses) candidates[a.family].delete(a.n);
    },
    more: () => candidates[4].size + candidates[6].size > 0,
  });
  return candidates;
}

/**
 * Bring the cached sets up to `changes` (`cluster` already describes the state after them).
 * Peer sets are edited, which is what computing them again would give (a set is the union of
 * what its peers select): a pod that came or now matches adds its addresses, one that went or no
 * longer matches takes away those no other selected pod, ipBlock or fixed address holds, one
 * that stays selected with the same addresses leaves the set as it is. What else the changes
 * touch (a namespace's labels, tuple sets) is dropped and computed again.
 */
export function invalidate(cache: SetCache, changes: ClusterChanges, cluster: Cluster): void {
  const namespaceLabels = cluster.namespaceLabels;
  if (changes.podRanges) cache.peers.delete(POD_RANGES_KEY);
  const count = changes.pods.length + changes.namespaces.length;
  if (count === 0) return;
  // Many changes at once (a first state, a relist): rebuilding is cheaper than testing each set.
  if (count * (cache.peers.size + cache.tuples.size) > MAX_TESTS) {
    cache.clear();
    return;
  }
  const gone = new Map(changes.namespaces.flatMap((c) => (c.before ? [[c.name, c.before]] : [])));
  // A namespace whose labels changed is handled by its own test below: either labels will do.
  const labelsOf = (ns: string) => namespaceLabels.get(ns) ?? gone.get(ns);
  const namespaceStale = (source: SetSource) =>
    changes.namespaces.some(
      (c) =>
        (c.before !== undefined && dependsOnNamespace(source, c.before)) ||
        (c.after !== undefined && dependsOnNamespace(source, c.after)),
    );
  const depends = (source: SetSource, pod: PodInfo | undefined, tuples: boolean) =>
    pod !== undefined && dependsOnPod(source, pod, labelsOf, tuples);
  for (const [key, entry] of cache.peers) {
    if (namespaceStale(entry.source)) {
      cache.peers.delete(key);
      continue;
    }
    const added: Record<Family, bigint[]> = { 4: [], 6: [] };
    const lost: Addresses = { 4: new Set(), 6: new Set() };
    for (const c of changes.pods) {
      const was = depends(entry.source, c.before, false);
      const is = depends(entry.source, c.after, false);
      // Selected before and after with the same addresses (a label or status change that keeps
      // it selected): the union is the same. Without this, every change of any pod made a set
      // of every pod (the unknown peers' "live pods") be computed again from every pod.
      if (was && is && c.before!.sameAddresses(c.after!)) continue;
      if (was) for (const a of c.before!.addresses) lost[a.family].add(a.n);
      if (is) for (const a of c.after!.addresses) added[a.family].push(a.n);
    }
    const gains = added[4].length + added[6].length > 0;
    const losses = lost[4].size + lost[6].size;
    if (!gains && losses === 0) continue;
    if (!entry.intervals || losses > MAX_LOST) {
      cache.peers.delete(key);
      continue;
    }
    // What left is checked against the state after the changes, gains included.
    const kept = losses ? shrinkPeers(entry, released(cluster, entry.source, lost)) : entry;
    cache.peers.set(key, gains ? extendPeers(kept, added) : kept);
  }
  for (const [key, entry] of cache.tuples) {
    if (
      namespaceStale(entry.source) ||
      changes.pods.some(
        (c) => depends(entry.source, c.before, true) || depends(entry.source, c.after, true),
      )
    )
      cache.tuples.delete(key);
  }
}
