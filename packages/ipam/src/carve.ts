// Carving node prefixes out of a pool (e.g. /64s out of a /48). The operator keeps the
// assignments in NodeConfigs (the API server is the source of truth) and calls this with
// them: an existing assignment is never moved, a new node gets the lowest free index, and a
// freed prefix stays quarantined until its `until` time has passed.
import { MAX_NODE_PREFIX_BITS, familyName, type Parsed } from '@flock/api';
import { formatPrefix, parsePrefix, subPrefix, subPrefixIndex, type Prefix } from './prefix.js';

/** Freed node prefixes are not handed out again for a day: long enough for BGP, DNS and
 * firewall allow-lists elsewhere in the datacenter to forget the node that had it. */
export const DEFAULT_PREFIX_QUARANTINE_MS = 24 * 60 * 60 * 1000;

export interface QuarantinedPrefix {
  prefix: string;
  /** Epoch milliseconds; the prefix is free again when now >= until. */
  until: number;
}

export interface CarveInput {
  /** Name of the pool, for messages. */
  pool: string;
  /** The pool's range, e.g. 2001:db8:100::/48. */
  cidr: string;
  /** Length of every node prefix, e.g. 64. */
  nodePrefixLength: number;
  /** node name → its prefix, as recorded in the NodeConfigs. */
  assignments: ReadonlyMap<string, string>;
  quarantined?: readonly QuarantinedPrefix[];
  /** Epoch milliseconds, compared with the quarantine's `until`. */
  now: number;
}

/** Node prefix counts; exact numbers (a pool holds at most 2^32 node prefixes). */
export interface PrefixCounts {
  total: number;
  allocated: number;
  quarantined: number;
  free: number;
}

export interface PrefixExhausted {
  code: 'Exhausted';
  pool: string;
  cidr: string;
  nodePrefixLength: number;
  counts: PrefixCounts;
  message: string;
}

/** An assignment or quarantine entry that does not fit the pool; reported, never moved. */
export interface CarveProblem {
  node?: string;
  prefix: string;
  reason: 'invalid' | 'outside-pool' | 'wrong-length' | 'duplicate';
  message: string;
}

type CarveResult =
  { ok: true; prefix: string; existing: boolean } | { ok: false; error: PrefixExhausted };

export class PrefixCarver {
  readonly problems: CarveProblem[] = [];
  readonly total: number;
  private readonly assigned = new Map<string, string>();
  /** Indices of prefixes held by a node. */
  private readonly allocated = new Set<number>();
  /** Indices still quarantined (and not allocated). */
  private readonly quarantined = new Set<number>();
  /** Every index below the cursor is taken: the lowest free index only ever grows here. */
  private cursor = 0;

  private constructor(
    private readonly input: CarveInput,
    private readonly pool: Prefix,
  ) {
    this.total = 2 ** (input.nodePrefixLength - pool.length);
    for (const [node, text] of input.assignments) {
      this.assigned.set(node, text);
      const index = this.indexOf(text, node);
      if (index === undefined) continue;
      if (this.allocated.has(index)) {
        this.problems.push({
          node,
          prefix: text,
          reason: 'duplicate',
          message: `node ${node}: prefix ${text} is also assigned to another node`,
        });
      }
      this.allocated.add(index);
    }
    for (const q of input.quarantined ?? []) {
      if (q.until <= input.now) continue;
      const index = this.indexOf(q.prefix);
      if (index !== undefined && !this.allocated.has(index)) this.quarantined.add(index);
    }
  }

  /** Validate the pool and build the carver; the error says what is wrong with the pool. */
  static create(input: CarveInput): Parsed<PrefixCarver> {
    const parsed = parsePrefix(input.cidr);
    if (!parsed.ok) return { ok: false, error: `pool ${input.pool}: ${parsed.error}` };
    const pool = parsed.value;
    const bits = input.nodePrefixLength - pool.length;
    const width = pool.family === 4 ? 32 : 128;
    if (!Number.isInteger(input.nodePrefixLength) || bits <= 0 || input.nodePrefixLength > width) {
      return {
        ok: false,
        error: `pool ${input.pool}: node prefix length ${input.nodePrefixLength} must be longer than ${input.cidr} and at most ${width}`,
      };
    }
    if (bits > MAX_NODE_PREFIX_BITS) {
      return {
        ok: false,
        error: `pool ${input.pool}: ${input.cidr} holds 2^${bits} /${input.nodePrefixLength} prefixes, at most 2^${MAX_NODE_PREFIX_BITS} are supported`,
      };
    }
    return { ok: true, value: new PrefixCarver(input, pool) };
  }

  /** The node's prefix: its existing one, else the lowest free one (which it then holds). */
  assign(node: string): CarveResult {
    const existing = this.assigned.get(node);
    if (existing !== undefined) return { ok: true, prefix: existing, existing: true };
    while (
      this.cursor < this.total &&
      (this.allocated.has(this.cursor) || this.quarantined.has(this.cursor))
    ) {
      this.cursor++;
    }
    if (this.cursor >= this.total) return { ok: false, error: this.exhausted() };
    const index = this.cursor;
    this.allocated.add(index);
    const prefix = formatPrefix(subPrefix(this.pool, this.input.nodePrefixLength, index));
    this.assigned.set(node, prefix);
    return { ok: true, prefix, existing: false };
  }

  counts(): PrefixCounts {
    const allocated = this.allocated.size;
    const quarantined = this.quarantined.size;
    return {
      total: this.total,
      allocated,
      quarantined,
      free: this.total - allocated - quarantined,
    };
  }

  private exhausted(): PrefixExhausted {
    const counts = this.counts();
    const { pool, cidr, nodePrefixLength } = this.input;
    return {
      code: 'Exhausted',
      pool,
      cidr,
      nodePrefixLength,
      counts,
      message:
        `pool ${pool}: no free /${nodePrefixLength} left in ${familyName(this.pool.family)} range ${cidr} ` +
        `(${counts.total} in total: ${counts.allocated} assigned, ${counts.quarantined} quarantined)`,
    };
  }

  /** Index of a node prefix in the pool, or undefined (and a recorded problem) when it does not fit. */
  private indexOf(text: string, node?: string): number | undefined {
    const who = node === undefined ? 'quarantined prefix' : `node ${node}`;
    const problem = (reason: CarveProblem['reason'], message: string) => {
      this.problems.push({
        ...(node === undefined ? {} : { node }),
        prefix: text,
        reason,
        message,
      });
      return undefined;
    };
    const parsed = parsePrefix(text);
    if (!parsed.ok) return problem('invalid', `${who}: ${parsed.error}`);
    if (parsed.value.length !== this.input.nodePrefixLength) {
      return problem(
        'wrong-length',
        `${who}: ${text} is not a /${this.input.nodePrefixLength} (pool ${this.input.pool})`,
      );
    }
    const index = subPrefixIndex(this.pool, parsed.value);
    if (index === undefined) {
      return problem(
        'outside-pool',
        `${who}: ${text} is outside ${this.input.cidr} (pool ${this.input.pool})`,
      );
    }
    return Number(index);
  }
}
