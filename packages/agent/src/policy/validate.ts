// NetworkPolicies as they come from the API server, checked against what flock can enforce.
// The API server accepts some policies @flock/netpol refuses (e.g. a selector with more than 32
// expressions). Such a policy is neither skipped (that would allow what it denies) nor allowed
// to stop enforcement for the whole node: it is replaced by a stand-in that isolates the pods
// it selects, in the directions it isolates, and allows nothing — fail closed — and reported.
// So is a policy the cache did not keep whole because it is over flock's size limit.
import { LabelSelector } from '@flock/api';
import { NetworkPolicy, formatIssue, formatPath, type NetpolIssue } from '@flock/netpol';
import { z } from 'zod';

export interface CheckedPolicy {
  /** What translate() gets: the policy itself, or its fail-closed stand-in. */
  policy: NetworkPolicy;
  /** Set when the policy cannot be enforced as written. */
  problem?: string;
  /** Set when that is because the policy is over flock's size limit (its Event's reason). */
  reason?: 'PolicyOverLimit';
}

const PolicyTypes = z.array(z.enum(['Ingress', 'Egress'])).min(1);
const Identity = z.looseObject({
  metadata: z.looseObject({
    name: z.string().min(1),
    namespace: z.string().min(1),
    uid: z.string().optional(),
  }),
  /** Why the cache kept only the stand-in's spec (trim-policy.ts). */
  overLimit: z.string().optional(),
});

/**
 * The spec of a policy's fail-closed stand-in: the pods it selects (an unreadable podSelector:
 * every pod of the namespace, rather than none), isolated in the directions it isolates, and no
 * rule. Itself a valid spec.
 */
export function standInSpec(spec: Record<string, unknown>): NetworkPolicy['spec'] {
  const selector = LabelSelector.safeParse(spec['podSelector'] ?? {});
  const types = PolicyTypes.safeParse(spec['policyTypes']);
  const egressRules = Array.isArray(spec['egress']) && spec['egress'].length > 0;
  const policyTypes: ('Ingress' | 'Egress')[] = types.success
    ? types.data
    : egressRules || spec['policyTypes'] !== undefined
      ? ['Ingress', 'Egress']
      : ['Ingress'];
  return { podSelector: selector.success ? selector.data : {}, policyTypes };
}

/** Check one raw NetworkPolicy; undefined when it has no name and namespace (cannot happen for API objects). */
export function checkPolicy(raw: unknown): CheckedPolicy | undefined {
  const id = Identity.safeParse(raw);
  const overLimit = id.success ? id.data.overLimit : undefined;
  const parsed = overLimit === undefined ? NetworkPolicy.safeParse(raw) : undefined;
  if (parsed?.success) return { policy: parsed.data };
  if (!id.success) return undefined;
  const { name, namespace, uid } = id.data.metadata;
  const object = `networkpolicy ${namespace}/${name}`;
  const issues: NetpolIssue[] = parsed
    ? parsed.error.issues
        .slice(0, 5)
        .map((i) => ({ object, field: formatPath(i.path), message: i.message }))
    : [{ object, field: 'spec', message: overLimit ?? '' }];
  const spec = standInSpec(((raw as { spec?: unknown }).spec ?? {}) as Record<string, unknown>);
  return {
    policy: { metadata: { name, namespace, ...(uid ? { uid } : {}) }, spec },
    problem: `${issues.map(formatIssue).join('; ')} — its pods are isolated (${(
      spec.policyTypes ?? []
    ).join(' and ')}) and it allows nothing until it is fixed`,
    ...(overLimit === undefined ? {} : { reason: 'PolicyOverLimit' as const }),
  };
}

/** checkPolicy, once per object: the cache replaces an object when it changes. */
export class PolicyChecker {
  private readonly memo = new WeakMap<object, CheckedPolicy | null>();

  check(raw: object): CheckedPolicy | undefined {
    let hit = this.memo.get(raw);
    if (hit === undefined) {
      hit = checkPolicy(raw) ?? null;
      this.memo.set(raw, hit);
    }
    return hit ?? undefined;
  }
}
