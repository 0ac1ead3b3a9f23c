// The rule lines of pod and tier chains, and the ClusterNetworkPolicy tier chains themselves
// (render.ts puts them into the table).
import { createHash } from 'node:crypto';
import type { RuleIR, TierIR } from './ir.js';

/** Text that is safe inside an nft comment string (at most 128 bytes). */
export function comment(text: string): string {
  return `comment "${text.replace(/[^A-Za-z0-9 ._/:[\]-]/g, '_').slice(0, 128)}"`;
}

/** A chain: its lines from `chain NAME {` to `}`. Base chains (with a hook) never change. */
export interface NftChain {
  name: string;
  lines: string[];
  hook: boolean;
}

/** Which families a peer or tuple set has elements for (an empty family set is not written). */
export type Families = Map<string, { v4: boolean; v6: boolean }>;

/** Rules of one pod chain: ingress matches sources, egress matches destinations. */
export function ruleLines(
  rule: RuleIR,
  direction: 'ingress' | 'egress',
  families: Families,
  verdict: string,
): string[] {
  const note = comment(rule.comment);
  if (rule.kind === 'tuples') {
    const has = families.get(rule.tuples);
    return [
      ...(has?.v4
        ? [`\t\tip daddr . meta l4proto . th dport @${rule.tuples}_v4 ${verdict} ${note}`]
        : []),
      ...(has?.v6
        ? [`\t\tip6 daddr . meta l4proto . th dport @${rule.tuples}_v6 ${verdict} ${note}`]
        : []),
    ];
  }
  const ports = rule.ports ? `meta l4proto . th dport @${rule.ports} ` : '';
  if (!rule.peers) return [`\t\t${ports}${verdict} ${note}`];
  const has = families.get(rule.peers);
  const not = rule.except ? families.get(rule.except) : undefined;
  const addr = direction === 'ingress' ? 'saddr' : 'daddr';
  const line = (ip: 'ip' | 'ip6', family: 'v4' | 'v6') =>
    `\t\t${ip} ${addr} @${rule.peers}_${family} ` +
    (not?.[family] ? `${ip} ${addr} != @${rule.except}_${family} ` : '') +
    `${ports}${verdict} ${note}`;
  return [...(has?.v4 ? [line('ip', 'v4')] : []), ...(has?.v6 ? [line('ip6', 'v6')] : [])];
}

/** Where an egress Accept of a ClusterNetworkPolicy goes: the destination's ingress, then accept. */
export const EGRESS_ALLOWED = 'egress_allowed';

/**
 * The chain of one ClusterNetworkPolicy tier for a pod and direction, shared by every pod whose
 * rules there are the same (named by a hash of its lines, so a change makes a new chain and the
 * pod chains that jump to it change with it). Deny drops; Accept accepts (ingress) or goes to
 * the destination's ingress check (egress: `goto egress_allowed`); Pass returns to the pod chain
 * in the Admin tier (on to the NetworkPolicy tier) and allows in the Baseline tier (the default
 * after it). Falling off the end returns: nothing in this tier matched.
 */
export function tierChain(
  tier: 'admin' | 'baseline',
  d: TierIR,
  direction: 'ingress' | 'egress',
  families: Families,
): NftChain | undefined {
  // Its lines are a function of the IR and of the families its sets have: an unchanged tier
  // (the same object, kept by incremental translation) is not printed and hashed again.
  let sig = `${tier} ${direction}`;
  const code = (name: string | undefined) => {
    const has = families.get(name ?? '');
    return has ? (has.v4 ? (has.v6 ? '3' : '1') : has.v6 ? '2' : '0') : '-';
  };
  for (const r of d.rules)
    sig += r.kind === 'tuples' ? code(r.tuples) : code(r.peers) + (r.except ? code(r.except) : '');
  const hit = TIER_CHAINS.get(d);
  if (hit?.sig === sig) return hit.chain;
  const chain = tierChainOf(tier, d, direction, families);
  TIER_CHAINS.set(d, { sig, chain });
  return chain;
}

const TIER_CHAINS = new WeakMap<TierIR, { sig: string; chain: NftChain | undefined }>();

function tierChainOf(
  tier: 'admin' | 'baseline',
  d: TierIR,
  direction: 'ingress' | 'egress',
  families: Families,
): NftChain | undefined {
  const allow = direction === 'ingress' ? 'accept' : `goto ${EGRESS_ALLOWED}`;
  const pass = tier === 'admin' ? 'return' : allow;
  const rules = d.rules.flatMap((r) =>
    ruleLines(
      r,
      direction,
      families,
      r.action === 'deny' ? 'drop' : r.action === 'pass' ? pass : allow,
    ),
  );
  if (rules.length === 0) return undefined;
  const body = [`\t\t${comment(`${tier} ${direction}: ${d.policies.join(' ')}`)}`, ...rules];
  const hash = createHash('sha256').update(body.join('\n')).digest('hex').slice(0, 12);
  const name = `${tier}_${direction}_${hash}`;
  return { name, hook: false, lines: [`\tchain ${name} {`, ...body, '\t}'] };
}

/** A named set or verdict map: its declaration (without elements) and its elements. */
export interface NftSet {
  kind: 'set' | 'map';
  name: string;
  /** Declaration lines between `set NAME {` and the elements: type, flags, comment. */
  head: string[];
  elements: string[];
}

/** flock's table as data: what render() prints and what diffTables() compares. */
export interface NftTable {
  sets: NftSet[];
  chains: NftChain[];
  /** The ARP guard (an `arp` table of the same name), written and changed with this one. */
  arp?: NftTable;
}
