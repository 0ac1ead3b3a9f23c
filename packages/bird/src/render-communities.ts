// The statements an export filter runs on a route it accepts: the communities of the route's
// announcement class (by the static protocol it comes from), those of its own address (a
// pod's), and for iBGP peers the local preference. Deterministic like the rest of the
// renderer: communities canonical, de-duplicated and sorted numerically; addresses grouped by
// the communities they carry, so one prefix-set test serves every pod asking for the same.
import {
  canonicalCommunity,
  type ClassCommunities,
  type Communities,
  type Family,
} from '@flock/api';

/** Protocol names of the announcement classes, per family (BIRD_NAMES' static protocols). */
type ClassProtocols = Record<keyof ClassCommunities, Record<Family, string>>;

/** The announcement classes, in render order. */
export const CLASSES: readonly (keyof ClassCommunities)[] = [
  'aggregates',
  'pinned',
  'anycast',
  'services',
];

function sortedUnique(list: readonly string[] | undefined): number[][] {
  const unique = [...new Set((list ?? []).map(canonicalCommunity))];
  return unique
    .map((c) => c.split(':').map(Number))
    .sort((a, b) => {
      for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return (a[i] ?? 0) - (b[i] ?? 0);
      return 0;
    });
}

/** `bgp_community.add((A,B));` … `bgp_large_community.add((A,B,C));`, in a stable order. */
function communityStatements(c: Communities | undefined): string[] {
  return [
    ...sortedUnique(c?.standard).map((p) => `bgp_community.add((${p.join(',')}));`),
    ...sortedUnique(c?.large).map((p) => `bgp_large_community.add((${p.join(',')}));`),
  ];
}

interface TagInput {
  family: Family;
  classes: ClassProtocols;
  communities?: ClassCommunities | undefined;
  /** The classes that have routes of this family (the others need no test). */
  present: ReadonlySet<keyof ClassCommunities>;
  /** Host prefixes (canonical, of this family, announced) → the communities they carry. */
  hostCommunities: ReadonlyMap<string, Communities>;
}

/** What the export filter does to a route it accepts, before `accept` (indented 4). */
export function tagStatements(input: TagInput): string[] {
  const lines: string[] = [];
  for (const cls of CLASSES.filter((c) => input.present.has(c))) {
    const statements = communityStatements(input.communities?.[cls]);
    if (statements.length)
      lines.push(
        `    if proto = "${input.classes[cls][input.family]}" then { ${statements.join(' ')} }`,
      );
  }
  const groups = new Map<string, string[]>();
  for (const [prefix, communities] of input.hostCommunities) {
    const statements = communityStatements(communities).join(' ');
    if (!statements) continue;
    groups.set(statements, [...(groups.get(statements) ?? []), prefix]);
  }
  for (const statements of [...groups.keys()].sort()) {
    const prefixes = groups.get(statements) ?? [];
    lines.push(
      '    if net ~ [',
      ...prefixes.map((p, i) => `      ${p}${i < prefixes.length - 1 ? ',' : ''}`),
      `    ] then { ${statements} }`,
    );
  }
  return lines;
}
