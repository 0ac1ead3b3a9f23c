// Named sets shared between rules: peer addresses are computed once per distinct peer list
// (every local pod and every policy with the same peers use one set), port sets are shared by
// content. Set contents can outlive one translation in a SetCache (incremental translation).
// Names are handed out in order of first use, so the same state always gives the same names.
import type { Family } from '@flock/api';
import { formatAddress, intervalElement, mergeIntervals, type Interval } from './addresses.js';
import type { AddressSetIR, PortSetIR, TupleSetIR } from './ir.js';
import type { Peer } from './state.js';

export type FamilyIntervals = Record<Family, Interval[]>;

export interface Tuple {
  family: Family;
  n: bigint;
  /** Protocol number, for sorting. */
  order: number;
  protocol: string;
  port: number;
}

/** What a cached set's content depends on: a rule's peers, read in the policy's namespace. */
export interface SetSource {
  namespace: string;
  peers: readonly Peer[];
  /** Addresses the set holds whatever the pods do (a ClusterNetworkPolicy's `nodes` peers). */
  fixed?: readonly { family: Family; n: bigint }[];
}

export interface CachedSet {
  v4: string[];
  v6: string[];
  source: SetSource;
  /** Peer sets: the merged intervals the elements are the text of (index by index). */
  intervals?: FamilyIntervals;
}

/** One family of a set gaining addresses: unchanged elements keep their text (and the arrays
 *  their identity when nothing is new), so a pod joining a big set costs its new elements. */
function gain(
  family: Family,
  intervals: Interval[],
  text: string[],
  added: readonly bigint[],
): { intervals: Interval[]; text: string[] } {
  if (added.length === 0) return { intervals, text };
  const adds = [...added].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  // One merge of two sorted lists (as mergeIntervals would give); undefined text: a new element.
  const out: Interval[] = [];
  const outText: (string | undefined)[] = [];
  const push = (iv: Interval, t: string | undefined) => {
    const last = out[out.length - 1];
    if (last && iv.lo <= last.hi + 1n) {
      if (iv.hi > last.hi) {
        out[out.length - 1] = { lo: last.lo, hi: iv.hi };
        outText[out.length - 1] = undefined;
      }
      return;
    }
    out.push(iv);
    outText.push(t);
  };
  let i = 0;
  let k = 0;
  while (i < intervals.length || k < adds.length) {
    const old = intervals[i];
    if (old && (k >= adds.length || old.lo <= (adds[k] as bigint))) {
      push(old, text[i]);
      i++;
    } else {
      const n = adds[k++] as bigint;
      push({ lo: n, hi: n }, undefined);
    }
  }
  if (out.length === intervals.length && outText.every((t) => t !== undefined))
    return { intervals, text };
  return {
    intervals: out,
    text: outText.map((t, j) => t ?? intervalElement(out[j] as Interval, family)),
  };
}

type FamilyEdit = (
  family: Family,
  intervals: Interval[],
  text: string[],
) => { intervals: Interval[]; text: string[] };

/** A cached peer set with `edit` applied to each family (nothing changed: the same object). */
function editPeers(entry: CachedSet, edit: FamilyEdit): CachedSet {
  const { intervals } = entry;
  if (!intervals) throw new Error('a peer set without its intervals');
  const v4 = edit(4, intervals[4], entry.v4);
  const v6 = edit(6, intervals[6], entry.v6);
  if (v4.text === entry.v4 && v6.text === entry.v6) return entry;
  return {
    v4: v4.text,
    v6: v6.text,
    source: entry.source,
    intervals: { 4: v4.intervals, 6: v6.intervals },
  };
}

/** A cached peer set with these addresses added (they are in it already: the same object). */
export function extendPeers(entry: CachedSet, added: Record<Family, bigint[]>): CachedSet {
  return editPeers(entry, (family, intervals, text) =>
    gain(family, intervals, text, added[family]),
  );
}

/** One family of a set losing single addresses: intervals holding one are cut around it; the
 *  others keep their text (and the arrays their identity when nothing goes). */
function lose(
  family: Family,
  intervals: Interval[],
  text: string[],
  removed: ReadonlySet<bigint>,
): { intervals: Interval[]; text: string[] } {
  if (removed.size === 0) return { intervals, text };
  const cuts = [...removed].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const out: Interval[] = [];
  const outText: string[] = [];
  // A cut piece: its text is written below ('' is no element's text).
  const piece = (lo: bigint, hi: bigint) => {
    out.push({ lo, hi });
    outText.push('');
  };
  let k = 0;
  let changed = false;
  intervals.forEach((iv, i) => {
    while (k < cuts.length && (cuts[k] as bigint) < iv.lo) k++;
    if (k >= cuts.length || (cuts[k] as bigint) > iv.hi) {
      out.push(iv);
      outText.push(text[i] as string);
      return;
    }
    changed = true;
    let lo = iv.lo;
    for (; k < cuts.length && (cuts[k] as bigint) <= iv.hi; k++) {
      const n = cuts[k] as bigint;
      if (n > lo) piece(lo, n - 1n);
      lo = n + 1n;
    }
    if (lo <= iv.hi) piece(lo, iv.hi);
  });
  if (!changed) return { intervals, text };
  return {
    intervals: out,
    text: outText.map((t, j) => t || intervalElement(out[j] as Interval, family)),
  };
}

/** A cached peer set without these addresses (none of them in it: the same object). */
export function shrinkPeers(entry: CachedSet, removed: Record<Family, Set<bigint>>): CachedSet {
  return editPeers(entry, (family, intervals, text) =>
    lose(family, intervals, text, removed[family]),
  );
}

/**
 * Set contents kept from one translation to the next, by what they mean (the registry's keys).
 * Entries follow the pods and namespaces they depend on: invalidate() edits or removes them.
 * Their arrays go into the IR as they are (unchanged sets are the same arrays, which diffTables
 * recognises without comparing elements): never modify them.
 */
export class SetCache {
  readonly peers = new Map<string, CachedSet>();
  readonly tuples = new Map<string, CachedSet>();

  clear(): void {
    this.peers.clear();
    this.tuples.clear();
  }
}

export class SetRegistry {
  readonly addressSets: AddressSetIR[] = [];
  readonly portSets: PortSetIR[] = [];
  readonly tupleSets: TupleSetIR[] = [];
  private readonly peersByKey = new Map<string, string | null>();
  private readonly portsByContent = new Map<string, string>();
  private readonly tuplesByKey = new Map<string, string | null>();

  constructor(private readonly cache: SetCache = new SetCache()) {}

  /** Name of the peer set of one policy rule; null when it holds no address. */
  peers(
    key: string,
    comment: string,
    source: SetSource,
    compute: () => FamilyIntervals,
  ): string | null {
    if (this.peersByKey.has(key)) return this.peersByKey.get(key) ?? null;
    let hit = this.cache.peers.get(key);
    if (!hit) {
      const computed = compute();
      const intervals = { 4: mergeIntervals(computed[4]), 6: mergeIntervals(computed[6]) };
      const v4 = intervals[4].map((iv) => intervalElement(iv, 4));
      const v6 = intervals[6].map((iv) => intervalElement(iv, 6));
      this.cache.peers.set(key, (hit = { v4, v6, source, intervals }));
    }
    const { v4, v6 } = hit;
    let name: string | null = null;
    if (v4.length || v6.length) {
      name = `peers_${this.addressSets.length}`;
      this.addressSets.push({ name, comment, v4, v6 });
    }
    this.peersByKey.set(key, name);
    return name;
  }

  /** Name of a port set with these elements (shared by every rule with the same ports). */
  ports(elements: string[], interval: boolean): string {
    const key = elements.join(',');
    let name = this.portsByContent.get(key);
    if (!name) {
      name = `ports_${this.portSets.length}`;
      this.portSets.push({ name, elements, interval });
      this.portsByContent.set(key, name);
    }
    return name;
  }

  /** Name of the address . protocol . port set of one egress rule with named ports; null when empty. */
  tuples(key: string, comment: string, source: SetSource, compute: () => Tuple[]): string | null {
    if (this.tuplesByKey.has(key)) return this.tuplesByKey.get(key) ?? null;
    let hit = this.cache.tuples.get(key);
    if (!hit) {
      const tuples = compute().sort((a, b) =>
        a.n < b.n ? -1 : a.n > b.n ? 1 : a.order - b.order || a.port - b.port,
      );
      const text = (t: Tuple) => `${formatAddress(t.n, t.family)} . ${t.protocol} . ${t.port}`;
      const v4 = [...new Set(tuples.filter((t) => t.family === 4).map(text))];
      const v6 = [...new Set(tuples.filter((t) => t.family === 6).map(text))];
      this.cache.tuples.set(key, (hit = { v4, v6, source }));
    }
    const { v4, v6 } = hit;
    let name: string | null = null;
    if (v4.length || v6.length) {
      name = `tuples_${this.tupleSets.length}`;
      this.tupleSets.push({ name, comment, v4, v6 });
    }
    this.tuplesByKey.set(key, name);
    return name;
  }
}
