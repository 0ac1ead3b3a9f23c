// One address family's bookkeeping on a node: who holds which address, which released
// addresses are still quarantined (and until when), and counts inside the node prefix.
// State is proportional to the addresses in use, never to the size of the prefix.
import { prefixContainsAddress, type Prefix } from './prefix.js';
import { usableCount, reservedOffsets, type ReservedOffsets } from './reserved.js';

export interface Holder {
  /** Who holds the address (the agent uses the container ID and interface). */
  owner: string;
  /** "namespace/name" of the pod. */
  identity: string;
  pinned: boolean;
}

export interface QuarantineEntry {
  /** Epoch milliseconds; free again when now >= until. */
  until: number;
  /** The identity that released it (a `stable` pod of that name may take it back). */
  identity: string;
  /** Released by a pinned allocation (a pin request may take it back). */
  pinned: boolean;
}

/** The namespace part of a holder identity ("namespace/name"): quarantine is bounded per namespace. */
function namespaceOf(identity: string): string {
  const slash = identity.indexOf('/');
  return slash < 0 ? identity : identity.slice(0, slash);
}

export class AddressBook {
  readonly reserved: ReservedOffsets | undefined;
  private readonly held = new Map<bigint, Holder>();
  private readonly quarantine = new Map<bigint, QuarantineEntry>();
  /**
   * Quarantined addresses in release order: expiry pops from the front. An undone take puts
   * an older `until` at the back; it then expires late, which only lengthens its quarantine.
   */
  private expiry: { value: bigint; until: number }[] = [];
  private expiryHead = 0;
  /** Last quarantined address released by each identity, for `stable` re-use. */
  private readonly releasedBy = new Map<string, bigint>();
  private heldInPrefix = 0;
  private quarantinedInPrefix = 0;
  /**
   * Per namespace, its quarantined addresses in the prefix: how many, and in release order (an
   * item whose number is no longer the address's quarantine is skipped when reached).
   */
  private readonly quarantinedBy = new Map<
    string,
    { count: number; order: { value: bigint; seq: number }[] }
  >();
  /** Each quarantine's number, in release order: tells a current item from an earlier one. */
  private readonly quarantineSeq = new Map<bigint, number>();
  private seq = 0;
  /** Quarantines ended early because a namespace reached its bound (a counter). */
  cut = 0;
  /** No offset below this one is free (sequential allocation starts here). */
  lowestMaybeFree = 0n;

  /**
   * `prefix` is the node prefix of this family (undefined: only pinned addresses).
   * `perNamespace`: how many of the prefix's addresses one namespace may keep quarantined; past
   * it, that namespace's oldest quarantine ends early, so a namespace that churns pods through
   * the node cannot take the free addresses of every other namespace's pods.
   */
  constructor(
    readonly prefix: Prefix | undefined,
    readonly perNamespace = Infinity,
  ) {
    this.reserved = prefix && reservedOffsets(prefix);
  }

  holder(value: bigint): Holder | undefined {
    return this.held.get(value);
  }

  quarantined(value: bigint): QuarantineEntry | undefined {
    return this.quarantine.get(value);
  }

  /** Held or quarantined: not available to the allocation algorithms. */
  isTaken(value: bigint): boolean {
    return this.held.has(value) || this.quarantine.has(value);
  }

  /** The quarantined address this identity released last, if it is still quarantined. */
  releasedByIdentity(identity: string): bigint | undefined {
    return this.releasedBy.get(identity);
  }

  inPrefix(value: bigint): boolean {
    return (
      this.prefix !== undefined &&
      prefixContainsAddress(this.prefix, { family: this.prefix.family, value })
    );
  }

  /**
   * Hold an address, taking it out of quarantine if it was there. Returns the quarantine
   * entry it replaced, so that `untake` can put it back.
   */
  take(value: bigint, holder: Holder): QuarantineEntry | undefined {
    const previous = this.quarantine.get(value);
    this.unquarantine(value, false);
    this.held.set(value, holder);
    if (this.inPrefix(value)) this.heldInPrefix++;
    return previous;
  }

  /**
   * Stop holding an address and quarantine it until `until`; with no `until` it is free at once
   * (an address no pod ever used: its ADD failed before the runtime saw it).
   */
  release(value: bigint, until: number | undefined): void {
    const holder = this.held.get(value);
    if (!holder || !this.unhold(value)) return;
    if (until === undefined) {
      if (this.inPrefix(value)) this.freed(value);
      return;
    }
    this.enterQuarantine(value, { until, identity: holder.identity, pinned: holder.pinned });
  }

  /** Quarantine an address that is not held (after a restart); keeps a longer quarantine. */
  restore(value: bigint, entry: QuarantineEntry): boolean {
    if (this.held.has(value)) return false;
    const current = this.quarantine.get(value);
    if (current && current.until >= entry.until) return false;
    this.unquarantine(value, false);
    this.enterQuarantine(value, { ...entry });
    return true;
  }

  /** Undo a `take` of a half-done allocation: back into quarantine as it was, or free. */
  untake(value: bigint, previous: QuarantineEntry | undefined): void {
    if (!this.unhold(value)) return;
    if (previous) this.enterQuarantine(value, previous);
    else if (this.inPrefix(value)) this.freed(value);
  }

  /** Held → not held; true when it was held. Not free yet: the caller decides what it becomes. */
  private unhold(value: bigint): boolean {
    if (!this.held.delete(value)) return false;
    if (this.inPrefix(value)) this.heldInPrefix--;
    return true;
  }

  private enterQuarantine(value: bigint, entry: QuarantineEntry): void {
    this.quarantine.set(value, entry);
    this.expiry.push({ value, until: entry.until });
    this.releasedBy.set(entry.identity, value);
    if (!this.inPrefix(value)) return;
    this.quarantinedInPrefix++;
    const ns = namespaceOf(entry.identity);
    const mine = this.quarantinedBy.get(ns) ?? { count: 0, order: [] };
    this.quarantinedBy.set(ns, mine);
    mine.count++;
    const seq = ++this.seq;
    this.quarantineSeq.set(value, seq);
    mine.order.push({ value, seq });
    while (mine.count > this.perNamespace) {
      const oldest = mine.order.shift() as { value: bigint; seq: number };
      if (this.quarantineSeq.get(oldest.value) !== oldest.seq) continue; // re-taken since
      this.unquarantine(oldest.value, true);
      this.cut++;
    }
    // Items of addresses re-taken since pile up while the namespace keeps some quarantined.
    if (mine.order.length > 2 * mine.count + 64)
      mine.order = mine.order.filter((item) => this.quarantineSeq.get(item.value) === item.seq);
  }

  /** Free every quarantined address whose time has come. */
  expire(now: number): void {
    while (this.expiryHead < this.expiry.length) {
      const next = this.expiry[this.expiryHead] as { value: bigint; until: number };
      if (next.until > now) break;
      this.expiryHead++;
      // Only if this queue item is the current entry (the address may have been re-taken and released again).
      if (this.quarantine.get(next.value)?.until === next.until)
        this.unquarantine(next.value, true);
    }
    if (this.expiryHead > 1024 && this.expiryHead * 2 > this.expiry.length) {
      this.expiry = this.expiry.slice(this.expiryHead);
      this.expiryHead = 0;
    }
  }

  counts(): { usable: bigint; allocated: number; quarantined: number; free: bigint } {
    const usable = this.reserved ? usableCount(this.reserved) : 0n;
    const allocated = this.heldInPrefix;
    const quarantined = this.quarantinedInPrefix;
    return { usable, allocated, quarantined, free: usable - BigInt(allocated + quarantined) };
  }

  private unquarantine(value: bigint, becomesFree: boolean): void {
    const entry = this.quarantine.get(value);
    if (!entry) return;
    this.quarantine.delete(value);
    if (this.releasedBy.get(entry.identity) === value) this.releasedBy.delete(entry.identity);
    if (this.inPrefix(value)) {
      this.quarantinedInPrefix--;
      this.quarantineSeq.delete(value);
      const ns = namespaceOf(entry.identity);
      const mine = this.quarantinedBy.get(ns);
      if (mine && --mine.count === 0) this.quarantinedBy.delete(ns);
      if (becomesFree) this.freed(value);
    }
  }

  private freed(value: bigint): void {
    const offset = value - (this.prefix?.network ?? 0n);
    if (offset < this.lowestMaybeFree) this.lowestMaybeFree = offset;
  }
}
