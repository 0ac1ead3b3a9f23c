// Per-node address allocation over the node's cidr6 (and cidr4): one IPv6 address (and one
// IPv4 address) per owner, by the pod's interface-ID algorithm or its pinned addresses.
// Released addresses are quarantined before anyone else may get them. Every address that
// leaves this module is canonical text (RFC 5952 for IPv6).
import type { Family, Parsed } from '@flock/api';
import { DEFAULT_IP_ALGO, familyName } from '@flock/api';
import { canonicalAddress, formatAddress, parseAddress } from './address.js';
import { steadyNow } from './clock.js';
import { AddressBook, type Holder, type QuarantineEntry } from './address-book.js';
import {
  DEFAULT_ADDRESS_QUARANTINE_MS,
  DEFAULT_QUARANTINE_SHARE,
  holderIdentity,
  type Allocation,
  type AllocationErrorCode,
  type AllocationError,
  type AllocationRequest,
  type AllocationResult,
  type AllocatorOptions,
  type FamilyCounts,
  type ReleasedAddress,
} from './allocation.js';
import {
  INTERFACE_ID_ALGORITHMS,
  defaultRandomBytes,
  interfaceIdAlgorithm,
  probeFree,
  type InterfaceIdAlgorithm,
  type RandomBytes,
} from './interface-id.js';
import {
  formatPrefix,
  hostBits,
  parsePrefix,
  prefixContainsAddress,
  type Prefix,
} from './prefix.js';
import {
  isReservedInterfaceId,
  isReservedOffset,
  reservedOffsets,
  usableCount,
  type ReservedOffsets,
} from './reserved.js';

/** One address chosen (and the quarantine entry it ended, to undo), or why not. */
type Step =
  | { ok: true; value: bigint; previous: QuarantineEntry | undefined }
  | { ok: false; error: AllocationError };

const fail = (code: AllocationErrorCode, message: string, family?: Family) => ({
  ok: false as const,
  error: { code, message, ...(family ? { family } : {}) },
});

const IID_MASK = (1n << 64n) - 1n;

/** How many of a prefix's usable addresses one namespace may keep quarantined (at least one). */
function perNamespaceBound(prefix: Prefix, share: number): number {
  if (share >= 1) return Infinity;
  const usable = Number(usableCount(reservedOffsets(prefix)));
  return Math.max(1, Math.floor(usable * share));
}

export class AddressAllocator {
  private readonly books: Record<Family, AddressBook>;
  private readonly owners = new Map<string, Allocation>();
  /** How long a released address stays quarantined. */
  readonly quarantineMs: number;
  private readonly now: () => number;
  private readonly randomBytes: RandomBytes;

  private constructor(
    prefix6: Prefix,
    prefix4: Prefix | undefined,
    private readonly pinnedRanges: readonly Prefix[],
    options: AllocatorOptions,
  ) {
    const share = options.quarantineShare ?? DEFAULT_QUARANTINE_SHARE;
    this.books = {
      6: new AddressBook(prefix6, perNamespaceBound(prefix6, share)),
      4: new AddressBook(prefix4, prefix4 && perNamespaceBound(prefix4, share)),
    };
    this.quarantineMs = options.quarantineMs ?? DEFAULT_ADDRESS_QUARANTINE_MS;
    this.now = options.now ?? steadyNow;
    this.randomBytes = options.randomBytes ?? defaultRandomBytes;
  }

  static create(options: AllocatorOptions): Parsed<AddressAllocator> {
    const prefix6 = parsePrefix(options.cidr6);
    if (!prefix6.ok || prefix6.value.family !== 6 || prefix6.value.length > 120) {
      return {
        ok: false,
        error: `cidr6 ${JSON.stringify(options.cidr6)} must be an IPv6 prefix of /120 or shorter`,
      };
    }
    let prefix4: Prefix | undefined;
    if (options.cidr4 !== undefined) {
      const parsed = parsePrefix(options.cidr4);
      if (!parsed.ok || parsed.value.family !== 4 || parsed.value.length > 30) {
        return {
          ok: false,
          error: `cidr4 ${JSON.stringify(options.cidr4)} must be an IPv4 prefix of /30 or shorter`,
        };
      }
      prefix4 = parsed.value;
    }
    const pinned: Prefix[] = [];
    for (const text of options.pinnedCIDRs ?? []) {
      const parsed = parsePrefix(text);
      if (!parsed.ok) return { ok: false, error: `pinned range: ${parsed.error}` };
      pinned.push(parsed.value);
    }
    const share = options.quarantineShare;
    if (share !== undefined && !(share > 0 && share <= 1)) {
      return { ok: false, error: `quarantineShare must be in (0, 1], got ${share}` };
    }
    const q = options.quarantineMs;
    if (q !== undefined && !(Number.isFinite(q) && q >= 0)) {
      return {
        ok: false,
        error: `quarantineMs must be a non-negative number of milliseconds, got ${q}`,
      };
    }
    return { ok: true, value: new AddressAllocator(prefix6.value, prefix4, pinned, options) };
  }

  /** Addresses for an owner. The same owner asking again gets what it already has. */
  allocate(request: AllocationRequest): AllocationResult {
    this.expire();
    const existing = this.owners.get(request.owner);
    if (existing) return { ok: true, value: { ...existing } };
    const holder: Holder = {
      owner: request.owner,
      identity: holderIdentity(request.namespace, request.name),
      pinned: false,
    };
    const algorithm = interfaceIdAlgorithm(request.algo ?? DEFAULT_IP_ALGO);
    const v6 = request.pinned?.ipv6
      ? this.pin(6, request.pinned.ipv6, holder)
      : this.pick(6, algorithm, request, holder);
    if (!v6.ok) return v6;
    let v4: Step | undefined;
    if (request.pinned?.ipv4) {
      v4 = this.pin(4, request.pinned.ipv4, holder);
    } else if (this.books[4].prefix && request.ipv4 !== false) {
      // IPv4 slices are small: always the lowest free address (a stable pod still takes back its own).
      v4 = this.pick(4, INTERFACE_ID_ALGORITHMS.sequential, request, holder, algorithm.reclaim);
    }
    if (v4 && !v4.ok) {
      // Give the IPv6 address back exactly as it was (free, or still quarantined).
      this.books[6].untake(v6.value, v6.previous);
      return v4;
    }

    const allocation: Allocation = {
      owner: request.owner,
      namespace: request.namespace,
      name: request.name,
      ip6: formatAddress(6, v6.value),
      ...(v4 ? { ip4: formatAddress(4, v4.value) } : {}),
      pinned: Boolean(request.pinned?.ipv6 || request.pinned?.ipv4),
    };
    this.owners.set(request.owner, allocation);
    return { ok: true, value: { ...allocation } };
  }

  /**
   * Record addresses that are already in use (committed allocations found in the store at
   * start-up). They must lie in the node prefix or a pinned range and be free.
   */
  markAllocated(allocation: Allocation): AllocationResult {
    this.expire();
    const existing = this.owners.get(allocation.owner);
    if (existing) {
      const same =
        existing.ip6 === canonicalAddress(allocation.ip6) &&
        existing.ip4 ===
          (allocation.ip4 === undefined ? undefined : canonicalAddress(allocation.ip4));
      return same
        ? { ok: true, value: { ...existing } }
        : fail(
            'Conflict',
            `owner ${allocation.owner} already holds ${existing.ip6}${existing.ip4 ? ` and ${existing.ip4}` : ''}`,
          );
    }
    const identity = holderIdentity(allocation.namespace, allocation.name);
    const values: [Family, bigint][] = [];
    for (const [family, text] of [
      [6, allocation.ip6],
      [4, allocation.ip4],
    ] as const) {
      if (text === undefined) continue;
      const address = parseAddress(text);
      if (!address || address.family !== family) {
        return fail(
          'InvalidAddress',
          `${JSON.stringify(text)} is not an ${familyName(family)} address`,
          family,
        );
      }
      const book = this.books[family];
      const inPrefix = book.inPrefix(address.value);
      if (
        inPrefix ? this.isReserved(book, address.value) : !this.inPinnedRange(family, address.value)
      ) {
        return fail(
          'OutOfRange',
          `${text} is not a usable address of this node's prefixes or pinned ranges`,
          family,
        );
      }
      const other = book.holder(address.value);
      if (other) return fail('Conflict', `${text} is already held by ${other.owner}`, family);
      values.push([family, address.value]);
    }
    for (const [family, value] of values) {
      // Only an address from a pinned range counts as pinned (the other family may be carved).
      const pinned = allocation.pinned && this.inPinnedRange(family, value);
      this.books[family].take(value, { owner: allocation.owner, identity, pinned });
    }
    const canonical: Allocation = {
      ...allocation,
      ip6: formatAddress(6, (values[0] as [Family, bigint])[1]),
      ...(values[1] ? { ip4: formatAddress(4, values[1][1]) } : {}),
    };
    this.owners.set(allocation.owner, canonical);
    return { ok: true, value: { ...canonical } };
  }

  /**
   * Release an owner's addresses into quarantine; returns what was released. `used: false`: no
   * pod ever had them (its ADD failed before the runtime saw them), so they are free at once.
   */
  release(owner: string, o: { used?: boolean } = {}): Allocation | undefined {
    this.expire();
    const allocation = this.owners.get(owner);
    if (!allocation) return undefined;
    this.owners.delete(owner);
    const until = (o.used ?? true) ? this.now() + this.quarantineMs : undefined;
    for (const [family, text] of [
      [6, allocation.ip6],
      [4, allocation.ip4],
    ] as const) {
      const address = text === undefined ? undefined : parseAddress(text);
      if (address) this.books[family].release(address.value, until);
    }
    return allocation;
  }

  get(owner: string): Allocation | undefined {
    const allocation = this.owners.get(owner);
    return allocation && { ...allocation };
  }

  allocations(): Allocation[] {
    return [...this.owners.values()].map((a) => ({ ...a }));
  }

  /** Owner holding this address, if any. */
  ownerOf(ip: string): string | undefined {
    const address = parseAddress(ip);
    return address && this.books[address.family].holder(address.value)?.owner;
  }

  /**
   * Quarantine an address the store recorded as released (before a restart, or by an entry
   * this allocator never held) until its `until`. Ignored when that time has passed, the
   * address is held, or it is neither in the node prefix nor in a pinned range; a longer
   * quarantine already in place is kept. True when it was restored. At most one quarantine from
   * now: a time written under a clock that was far ahead does not hold the address until then.
   */
  restoreReleased(released: ReleasedAddress): boolean {
    this.expire();
    const address = parseAddress(released.ip);
    const until = Math.min(Date.parse(released.until), this.now() + this.quarantineMs);
    if (!address || !(until > this.now())) return false;
    const book = this.books[address.family];
    const inPinned = this.pinnedRanges.some(
      (r) => r.family === address.family && prefixContainsAddress(r, address),
    );
    if (!book.inPrefix(address.value) && !inPinned) return false;
    return book.restore(address.value, {
      until,
      identity: released.identity,
      pinned: released.pinned,
    });
  }

  /** Is the address quarantined (released, not yet reusable)? */
  isQuarantined(ip: string): boolean {
    this.expire();
    const address = parseAddress(ip);
    return (
      address !== undefined && this.books[address.family].quarantined(address.value) !== undefined
    );
  }

  counts(): { ipv6: FamilyCounts; ipv4?: FamilyCounts; owners: number; pinned: number } {
    this.expire();
    const ipv4 = this.familyCounts(4);
    return {
      ipv6: this.familyCounts(6) as FamilyCounts,
      ...(ipv4 ? { ipv4 } : {}),
      owners: this.owners.size,
      pinned: [...this.owners.values()].filter((a) => a.pinned).length,
    };
  }

  private expire(): void {
    const now = this.now();
    this.books[6].expire(now);
    this.books[4].expire(now);
  }

  private familyCounts(family: Family): FamilyCounts | undefined {
    const book = this.books[family];
    return (
      book.prefix && {
        prefix: formatPrefix(book.prefix),
        ...book.counts(),
        quarantineCut: book.cut,
      }
    );
  }

  private isReserved(book: AddressBook, value: bigint): boolean {
    const prefix = book.prefix as Prefix;
    return isReservedOffset(book.reserved as ReservedOffsets, value - prefix.network);
  }

  private inPinnedRange(family: Family, value: bigint): boolean {
    return this.pinnedRanges.some((range) => prefixContainsAddress(range, { family, value }));
  }

  /** A pinned address: inside a pinned range, not reserved, not held, not quarantined for someone else. */
  private pin(family: Family, text: string, holder: Holder): Step {
    const address = parseAddress(text);
    if (!address || address.family !== family) {
      return fail(
        'InvalidAddress',
        `pinned ${JSON.stringify(text)} is not an ${familyName(family)} address`,
        family,
      );
    }
    const { value } = address;
    const ip = formatAddress(family, value);
    if (!this.inPinnedRange(family, value)) {
      const ranges = this.pinnedRanges.filter((r) => r.family === family).map(formatPrefix);
      const where = ranges.length
        ? `the pool's pinned ranges (${ranges.join(', ')})`
        : `any pinned range (the pool has no ${familyName(family)} pinned range)`;
      return fail('PinnedOutsideRanges', `pinned address ${ip} is outside ${where}`, family);
    }
    const book = this.books[family];
    if (
      (family === 6 && isReservedInterfaceId(value & IID_MASK)) ||
      (book.inPrefix(value) && this.isReserved(book, value))
    ) {
      return fail(
        'PinnedReserved',
        `pinned address ${ip} has a reserved interface ID (RFC 5453) and is never assigned`,
        family,
      );
    }
    const other = book.holder(value);
    if (other)
      return fail(
        'PinnedInUse',
        `pinned address ${ip} is in use by ${other.identity} (${other.owner})`,
        family,
      );
    const quarantined = book.quarantined(value);
    if (quarantined && !quarantined.pinned && quarantined.identity !== holder.identity) {
      const seconds = Math.ceil((quarantined.until - this.now()) / 1000);
      return fail(
        'PinnedQuarantined',
        `pinned address ${ip} was released by ${quarantined.identity} and is quarantined for another ${seconds} s`,
        family,
      );
    }
    const previous = book.take(value, { ...holder, pinned: true });
    return { ok: true, value, previous };
  }

  /** An address from the node prefix by the algorithm, searching up from its start offset. */
  private pick(
    family: Family,
    algorithm: InterfaceIdAlgorithm,
    request: AllocationRequest,
    holder: Holder,
    reclaim = algorithm.reclaim,
  ): Step {
    const book = this.books[family];
    const prefix = book.prefix as Prefix;
    const reserved = book.reserved as ReservedOffsets;
    if (reclaim) {
      // The same pod coming back (e.g. a StatefulSet member) takes back the address it released.
      const released = book.releasedByIdentity(holder.identity);
      if (released !== undefined && book.inPrefix(released)) {
        return { ok: true, value: released, previous: book.take(released, holder) };
      }
    }
    const counts = book.counts();
    if (counts.free <= 0n) {
      const what = family === 6 ? 'IPv6 prefix' : 'IPv4 slice';
      const state = { prefix: formatPrefix(prefix), ...counts, quarantineCut: book.cut };
      const message =
        `${what} ${state.prefix} is exhausted: ${counts.usable} usable addresses, ` +
        `${counts.allocated} allocated, ${counts.quarantined} quarantined ` +
        `(released addresses become free after ${Math.round(this.quarantineMs / 1000)} s)`;
      return { ok: false, error: { code: 'Exhausted', family, counts: state, message } };
    }
    const start = algorithm.start({
      bits: hostBits(prefix),
      namespace: request.namespace,
      name: request.name,
      lowestMaybeFree: book.lowestMaybeFree,
      randomBytes: this.randomBytes,
    });
    const offset = probeFree(reserved, start, (o) => book.isTaken(prefix.network + o));
    if (offset === undefined)
      throw new Error(`${formatPrefix(prefix)}: free count and search disagree`);
    // Everything between the old hint and the found offset is taken now.
    if (algorithm.advancesHint && offset >= book.lowestMaybeFree)
      book.lowestMaybeFree = offset + 1n;
    const value = prefix.network + offset;
    book.take(value, holder);
    return { ok: true, value, previous: undefined };
  }
}
