// Route changes in the router's kernel as `ip -ts monitor route` prints them
// (LabRouter.monitorRoutes(['-ts'])), parsed once for every test and bench that times
// announcements and withdrawals by the router's own clock.
import { setTimeout as delay } from 'node:timers/promises';
import { canonicalCidr, canonicalIp } from '@flock/bird';

export interface RouteEvent {
  /** The kernel's timestamp (ms since the epoch; `ip -ts` prints local time). */
  at: number;
  deleted: boolean;
  /** Canonical CIDR; a bare address is a /128 (IPv6) or /32 (IPv4). */
  prefix: string;
  /** The next hop (canonical) of a single-path route; absent for multipath or directly connected ones. */
  via?: string;
}

const LINE = /^\[([0-9T:.-]+)\] (Deleted )?(\S+)(?:.* via (?:inet6 )?(\S+))?/;

/** A route's target as a canonical CIDR (a bare address is a host route); throws on a type. */
function routePrefix(target: string): string {
  return canonicalCidr(
    target.includes('/') ? target : `${target}/${target.includes(':') ? 128 : 32}`,
  );
}

/** "[2026-12-02T02:35:15.460772] [Deleted ]PREFIX ... [via [inet6 ]HOP ...]"; else undefined. */
export function parseRouteEvent(line: string): RouteEvent | undefined {
  const m = LINE.exec(line);
  if (!m) return undefined;
  const [, stamp, deleted, target, via] = m;
  const at = Date.parse(stamp!);
  if (Number.isNaN(at)) return undefined;
  try {
    const prefix = routePrefix(target!);
    return {
      at,
      deleted: deleted !== undefined,
      prefix,
      ...(via ? { via: canonicalIp(via) } : {}),
    };
  } catch {
    return undefined; // a route type ("blackhole", "unreachable") or a line of another shape
  }
}

/** Every parsable event of `lines`, in order. */
export function routeEvents(lines: readonly string[]): RouteEvent[] {
  return lines.flatMap((line) => parseRouteEvent(line) ?? []);
}

/** One route as a change in `ip monitor route` prints it: a multipath route spans lines. */
export interface RouteChange {
  deleted: boolean;
  /** Canonical CIDR; a bare address is a /128 (IPv6) or /32 (IPv4). */
  prefix: string;
  /** Every next hop (canonical, sorted): the one of a single path, or each `nexthop via`. */
  via: string[];
}

const STAMP = /^\[[0-9T:.-]+\] ?/;
const HEAD = /^(Deleted )?(\S+)(?:.* via (?:inet6 )?(\S+))?/;
const HOP = /^\s*nexthop via (?:inet6 )?(\S+)/;

/**
 * Every route change of `lines` (with or without `-ts`), each multipath route with all its
 * next hops: a change of one member prints the others too, so a line alone does not say which
 * member changed.
 */
export function routeChanges(lines: readonly string[]): RouteChange[] {
  const out: RouteChange[] = [];
  let current: RouteChange | undefined;
  for (const raw of lines) {
    const line = raw.replace(STAMP, '');
    const hop = HOP.exec(line);
    if (hop) {
      if (current) current.via = [...current.via, canonicalIp(hop[1]!)].sort();
      continue;
    }
    current = undefined;
    const m = HEAD.exec(line);
    if (!m || /^\s/.test(line)) continue;
    const [, deleted, target, via] = m;
    try {
      current = {
        deleted: deleted !== undefined,
        prefix: routePrefix(target!),
        via: via ? [canonicalIp(via)] : [],
      };
      out.push(current);
    } catch {
      // a route type ("blackhole", "unreachable") or a line of another shape
    }
  }
  return out;
}

/**
 * The changes that add `hop` to a prefix or take it away, starting from the routes `before`
 * (prefix → next hops): a flap of that next hop, told from changes of a multipath route's other
 * members, which print `hop` again without changing it.
 */
export function hopFlaps(
  before: readonly { prefix: string; via: readonly string[] }[],
  changes: readonly RouteChange[],
  hop: string,
): RouteChange[] {
  const want = canonicalIp(hop);
  const has = new Map(before.map((r) => [r.prefix, r.via.includes(want)]));
  const flaps: RouteChange[] = [];
  for (const change of changes) {
    const now = !change.deleted && change.via.includes(want);
    // A deletion of a route without the hop says nothing of it.
    if (change.deleted && !change.via.includes(want)) continue;
    if (now !== (has.get(change.prefix) ?? false)) flaps.push(change);
    has.set(change.prefix, now);
  }
  return flaps;
}

/** Wait until a route monitor's `lines` have not grown for `quietMs`; throws after `timeoutMs`. */
export async function untilQuiet(
  lines: readonly string[],
  quietMs = 2_000,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let count = lines.length;
  let since = Date.now();
  while (Date.now() - since < quietMs) {
    if (Date.now() > deadline)
      throw new Error(
        `the router's routes still change after ${timeoutMs} ms:\n${lines.slice(-8).join('\n')}`,
      );
    await delay(100);
    if (lines.length !== count) {
      count = lines.length;
      since = Date.now();
    }
  }
}
