// Route changes in the router's kernel as `ip -ts monitor route` prints them
// (LabRouter.monitorRoutes(['-ts'])), parsed once for every test and bench that times
// announcements and withdrawals by the router's own clock.
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

/** "[2026-12-02T02:35:15.460772] [Deleted ]PREFIX ... [via [inet6 ]HOP ...]"; else undefined. */
export function parseRouteEvent(line: string): RouteEvent | undefined {
  const m = LINE.exec(line);
  if (!m) return undefined;
  const [, stamp, deleted, target, via] = m;
  const at = Date.parse(stamp!);
  if (Number.isNaN(at)) return undefined;
  try {
    const cidr = target!.includes('/') ? target! : `${target}/${target!.includes(':') ? 128 : 32}`;
    const prefix = canonicalCidr(cidr);
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
