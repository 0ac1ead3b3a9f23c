// The Pool's quarantine of freed node prefixes, as kept in its status: parsed into epoch
// milliseconds for the carver, grown when a NodeConfig goes away, pruned when entries expire.
import { MAX_QUARANTINE_ENTRIES, type QuarantineEntry } from '@flock/api';
import { normalizeCidr, type QuarantinedPrefix } from '@flock/ipam';

export interface Quarantined extends QuarantinedPrefix {
  node?: string;
}

const canonical = (prefix: string) => {
  const n = normalizeCidr(prefix);
  return n.ok ? n.value : prefix;
};

/** An entry's `until` in epoch ms; unreadable: a full quarantine from now. */
export function untilMs(until: string, now: number, quarantineMs: number): number {
  const parsed = Date.parse(until);
  return Number.isNaN(parsed) ? now + quarantineMs : parsed;
}

/**
 * The entries of a status still in force at `now`. An entry whose time cannot be read is
 * held for a full quarantine from now: a corrupted status must not free a prefix early.
 */
export function readQuarantine(
  entries: readonly QuarantineEntry[] | undefined,
  now: number,
  quarantineMs: number,
): Quarantined[] {
  const out: Quarantined[] = [];
  for (const e of entries ?? []) {
    const until = untilMs(e.until, now, quarantineMs);
    if (until <= now) continue;
    out.push({ prefix: canonical(e.prefix), until, ...(e.node ? { node: e.node } : {}) });
  }
  return out;
}

/** Add a freed prefix (kept as is when it is already quarantined: re-recording never extends). */
export function addToQuarantine(
  list: Quarantined[],
  prefix: string,
  node: string,
  now: number,
  quarantineMs: number,
): void {
  const key = canonical(prefix);
  if (list.some((q) => q.prefix === key)) return;
  list.push({ prefix: key, node, until: now + quarantineMs });
}

/**
 * The status form: sorted by expiry, then prefix (stable, so an unchanged quarantine is an
 * unchanged status). Past the CRD's limit the entries closest to expiry are dropped.
 */
export function writeQuarantine(list: readonly Quarantined[]): QuarantineEntry[] {
  const sorted = [...list].sort((a, b) => a.until - b.until || (a.prefix < b.prefix ? -1 : 1));
  return sorted.slice(Math.max(0, sorted.length - MAX_QUARANTINE_ENTRIES)).map((q) => ({
    prefix: q.prefix,
    ...(q.node ? { node: q.node } : {}),
    until: new Date(q.until).toISOString(),
  }));
}

/** Milliseconds until the earliest entry expires (undefined when there is none). */
export function nextExpiry(list: readonly Quarantined[], now: number): number | undefined {
  if (list.length === 0) return undefined;
  return Math.max(0, list.reduce((min, q) => Math.min(min, q.until), Infinity) - now);
}
