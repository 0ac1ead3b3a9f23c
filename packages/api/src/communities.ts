// BGP communities flock attaches to what a node announces: standard communities (RFC 1997,
// "65000:100", two 16-bit halves) and large communities (RFC 8092, "65000:1:2", three 32-bit
// parts), per announcement class (set on the Pool) and per pod (by annotation, from a list
// the Pool allows). The same grammar is checked by the API server (CEL), the operator and the
// agent, and by the pod annotation's parser.
import { z } from 'zod';
import type { Parsed } from './annotations.js';
import { withRules } from './rules.js';

/** Most communities of one kind in one list (each is a few bytes on every route). */
export const MAX_COMMUNITIES = 32;

const U16 = 65_535;
const U32 = 4_294_967_295;
const STANDARD_SHAPE = /^[0-9]{1,5}:[0-9]{1,5}$/;
const LARGE_SHAPE = /^[0-9]{1,10}:[0-9]{1,10}:[0-9]{1,10}$/;

const parts = (s: string) => s.split(':').map(Number);

/** "A:B", each 0..65535. */
export function isStandardCommunity(s: string): boolean {
  return STANDARD_SHAPE.test(s) && parts(s).every((n) => n <= U16);
}

/** "A:B:C", each 0..4294967295. */
export function isLargeCommunity(s: string): boolean {
  return LARGE_SHAPE.test(s) && parts(s).every((n) => n <= U32);
}

/** The community without leading zeros ("065000:0100" → "65000:100"); input must be valid. */
export function canonicalCommunity(s: string): string {
  return parts(s).join(':');
}

const celParts = (n: number, max: number) =>
  Array.from({ length: n }, (_, i) => `int(self.split(':')[${i}]) <= ${max}`).join(' && ');

export const StandardCommunity = withRules(
  z
    .string()
    .min(3)
    .max(11)
    .regex(STANDARD_SHAPE, 'a standard community is two numbers A:B, e.g. 65000:100')
    .describe('A standard BGP community "A:B" (RFC 1997), each half 0..65535.'),
  [
    {
      cel: `self.matches('${STANDARD_SHAPE.source}') && ${celParts(2, U16)}`,
      message: `a standard community is two 16-bit numbers A:B, each 0..${U16} (e.g. 65000:100); use a large community (A:B:C) for 32-bit ASNs`,
      check: isStandardCommunity,
    },
  ],
);

export const LargeCommunity = withRules(
  z
    .string()
    .min(5)
    .max(32)
    .regex(LARGE_SHAPE, 'a large community is three numbers A:B:C, e.g. 65000:1:2')
    .describe('A large BGP community "A:B:C" (RFC 8092), each part 0..4294967295.'),
  [
    {
      cel: `self.matches('${LARGE_SHAPE.source}') && ${celParts(3, U32)}`,
      message: `a large community is three 32-bit numbers A:B:C, each 0..${U32} (e.g. 65000:1:2)`,
      check: isLargeCommunity,
    },
  ],
);

export const Communities = z
  .object({
    standard: z
      .array(StandardCommunity)
      .max(MAX_COMMUNITIES)
      .optional()
      .describe('Standard communities "A:B".'),
    large: z
      .array(LargeCommunity)
      .max(MAX_COMMUNITIES)
      .optional()
      .describe('Large communities "A:B:C".'),
  })
  .describe('BGP communities.');
export type Communities = z.infer<typeof Communities>;

export const ClassCommunities = z
  .object({
    aggregates: Communities.optional().describe("Added to the node's prefixes (cidr6, cidr4)."),
    pinned: Communities.optional().describe(
      "Added to pods' own /128 and /32 announcements (pinned addresses, and addresses outside the node's prefixes).",
    ),
    anycast: Communities.optional().describe('Added to anycast /128 and /32 announcements.'),
    services: Communities.optional().describe(
      "Added to Service addresses (LoadBalancer /128 and /32) and to the pool's clusterIPs ranges.",
    ),
  })
  .describe('BGP communities by announcement class.');
export type ClassCommunities = z.infer<typeof ClassCommunities>;

/** A mixed list ("65000:100", "65000:1:2") split by kind, canonical, de-duplicated, in order. */
export function splitCommunities(list: readonly string[]): {
  standard: string[];
  large: string[];
} {
  const standard = new Set<string>();
  const large = new Set<string>();
  for (const c of list) {
    if (isStandardCommunity(c)) standard.add(canonicalCommunity(c));
    else if (isLargeCommunity(c)) large.add(canonicalCommunity(c));
  }
  return { standard: [...standard], large: [...large] };
}

/** Is every community of `wanted` in `allowed` (compared canonically)? Returns the others. */
export function communitiesOutside(
  wanted: readonly string[],
  allowed: Communities | undefined,
): string[] {
  const ok = new Set(
    [...(allowed?.standard ?? []), ...(allowed?.large ?? [])].map(canonicalCommunity),
  );
  return wanted.filter((c) => !ok.has(canonicalCommunity(c)));
}

/**
 * bgp-communities annotation: comma-separated standard ("A:B") and large ("A:B:C")
 * communities; canonical, de-duplicated, at most MAX_COMMUNITIES of each kind.
 */
export function parseCommunities(raw: string | undefined): Parsed<string[]> | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const items = raw.split(',').map((s) => s.trim());
  const bad = items.find((c) => !isStandardCommunity(c) && !isLargeCommunity(c));
  if (bad !== undefined) {
    return {
      ok: false,
      error: `bgp-communities: ${JSON.stringify(bad)} is neither a standard community A:B (16-bit halves) nor a large community A:B:C (32-bit parts)`,
    };
  }
  const { standard, large } = splitCommunities(items);
  if (standard.length > MAX_COMMUNITIES || large.length > MAX_COMMUNITIES) {
    return {
      ok: false,
      error: `bgp-communities: at most ${MAX_COMMUNITIES} standard and ${MAX_COMMUNITIES} large communities`,
    };
  }
  return { ok: true, value: [...standard, ...large] };
}
