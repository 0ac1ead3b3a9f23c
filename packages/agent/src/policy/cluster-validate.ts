// ClusterNetworkPolicies as they come from the API server, checked against what flock can
// enforce. Two things can stand between a policy and its enforcement:
// - it does not parse (a field from a newer CRD than flock knows, a value the schema refuses):
//   it is replaced by its fail-closed stand-in, read the way the API defines "fail closed" for a
//   rule it cannot read — an Accept rule matches nothing (left out), a Deny or Pass rule denies
//   everything — keeping the tier, priority and subject where they are readable (an unreadable
//   subject: every pod; an unreadable tier: Admin). v1alpha2 ingress peers cannot name addresses,
//   so an ingress "deny everything" is every pod of the cluster (`namespaces: {}`); egress is every
//   address (0.0.0.0/0 and ::/0).
// - it is over flock's size limit: the cache kept only what the stand-in reads (trim-policy.ts),
//   and it is enforced by that stand-in.
// - it has `domainNames` peers: flock sees no DNS, so they match nothing (the API allows them in
//   Accept rules only, where that is its fail-closed reading); the policy is enforced otherwise.
// Either is reported (a Warning Event on the policy) on nodes where its subject selects a pod.
import {
  CnpSubject,
  RuleAction,
  Tier,
  enforceability,
  type ClusterNetworkPolicy as ClusterPolicy,
} from '@flock/api';
import { ClusterNetworkPolicy, formatIssue, type NetpolIssue } from '@flock/netpol';
import { z } from 'zod';

export interface CheckedClusterPolicy {
  /** What translate() gets: the policy itself, or its fail-closed stand-in. */
  policy: ClusterPolicy;
  /** Set when the policy cannot be enforced as written. */
  problem?: string;
  /** Set when that is because the policy is over flock's size limit (its Event's reason). */
  reason?: 'PolicyOverLimit';
}

const Identity = z.looseObject({
  metadata: z.looseObject({ name: z.string().min(1), uid: z.string().optional() }),
  /** Why the cache kept only what the stand-in reads (trim-policy.ts). */
  overLimit: z.string().optional(),
});
/** How many rules of a direction the stand-in reads (the API allows 25). */
export const STAND_IN_RULES = 25;
const Priority = z.int().min(0).max(1000);
const DENY_EVERY_POD = [{ namespaces: {} }];
const DENY_EVERY_ADDRESS = [{ networks: ['0.0.0.0/0', '::/0'] }];

function standInRules(rules: unknown, peers: 'from' | 'to'): Record<string, unknown>[] {
  if (!Array.isArray(rules)) return [];
  return rules.slice(0, STAND_IN_RULES).flatMap((rule: unknown) => {
    const action = RuleAction.safeParse((rule as { action?: unknown } | null)?.action);
    if (action.success && action.data === 'Accept') return [];
    return [
      {
        name: 'flock-fail-closed',
        action: 'Deny',
        [peers]: peers === 'from' ? DENY_EVERY_POD : DENY_EVERY_ADDRESS,
      },
    ];
  });
}

/** Check one raw ClusterNetworkPolicy; undefined when it has no name (cannot happen for API objects). */
export function checkClusterPolicy(raw: unknown): CheckedClusterPolicy | undefined {
  const id = Identity.safeParse(raw);
  const overLimit = id.success ? id.data.overLimit : undefined;
  const verdict = overLimit === undefined ? enforceability(raw) : undefined;
  if (verdict?.ok) return { policy: verdict.policy };
  if (verdict?.reason === 'DomainNamesNotEnforced')
    return {
      policy: verdict.policy,
      problem: `clusternetworkpolicy ${verdict.policy.metadata.name}: ${verdict.fields.join(', ')}: domainNames peers cannot be enforced (flock does not see DNS) — they match nothing`,
    };
  if (!id.success) return undefined;
  const { name, uid } = id.data.metadata;
  const object = `clusternetworkpolicy ${name}`;
  const issues: NetpolIssue[] = verdict
    ? verdict.issues.map((i) => ({ object, ...i }))
    : [{ object, field: 'spec', message: overLimit ?? '' }];
  const spec = ((raw as { spec?: unknown }).spec ?? {}) as Record<string, unknown>;
  const tier = Tier.safeParse(spec['tier']);
  const priority = Priority.safeParse(spec['priority']);
  const subject = CnpSubject.safeParse(spec['subject']);
  const stand = ClusterNetworkPolicy.parse({
    metadata: { name, ...(uid ? { uid } : {}) },
    spec: {
      tier: tier.success ? tier.data : 'Admin',
      priority: priority.success ? priority.data : 0,
      subject: subject.success ? subject.data : { namespaces: {} },
      ingress: standInRules(spec['ingress'], 'from'),
      egress: standInRules(spec['egress'], 'to'),
    },
  });
  return {
    policy: stand,
    problem: `${issues.map(formatIssue).join('; ')} — enforced fail-closed until it is fixed: its Accept rules match nothing, its Deny and Pass rules deny everything`,
    ...(overLimit === undefined ? {} : { reason: 'PolicyOverLimit' as const }),
  };
}

/** checkClusterPolicy, once per object: the cache replaces an object when it changes. */
export class ClusterPolicyChecker {
  private readonly memo = new WeakMap<object, CheckedClusterPolicy | null>();

  check(raw: object): CheckedClusterPolicy | undefined {
    let hit = this.memo.get(raw);
    if (hit === undefined) {
      hit = checkClusterPolicy(raw) ?? null;
      this.memo.set(raw, hit);
    }
    return hit ?? undefined;
  }
}
