// What one reconcile pass reports: the NodeConfig condition PolicyApplied is made from it (the
// status writer subscribes with PolicyReconciler.onResult), and so are the agent's logs.
import type { DirectionIR, NetpolIR } from '@flock/netpol';
import type { BuiltState } from './state.js';

export type PolicyReason =
  /** Every policy is enforced as written. */
  | 'Applied'
  /** Applied, but some policy selecting a local pod cannot be enforced: its pods fail closed. */
  | 'PolicyNotEnforceable'
  /** The state could not be translated: the previous table stays in force. */
  | 'TranslateFailed'
  /** nft refused the script or failed: the previous table stays in force. */
  | 'ApplyFailed';

export interface PolicyResult {
  /** PolicyApplied: every NetworkPolicy selecting a pod of this node is in force as written. */
  ok: boolean;
  reason: PolicyReason;
  /** For people: what is in force, or what is wrong and what flock did about it. */
  message: string;
  /** Rules in the table (allow rules over all pod chains), when a table was applied. */
  rules?: number;
  /** Local pods in the table, when a table was applied. */
  pods?: number;
}

export type PolicyResultListener = (result: PolicyResult) => void;

/** The outcome of a pass that reached the kernel. */
export function appliedResult(built: BuiltState, ir: NetpolIR): PolicyResult {
  const count = (d: DirectionIR | undefined) =>
    (d?.rules.length ?? 0) + (d?.admin?.rules.length ?? 0) + (d?.baseline?.rules.length ?? 0);
  const rules = ir.pods.reduce((n, p) => n + count(p.ingress) + count(p.egress), 0);
  // Isolated: some NetworkPolicy isolates the pod in a direction.
  const isolated = ir.pods.filter(
    (p) => (p.ingress?.policies.length ?? 0) > 0 || (p.egress?.policies.length ?? 0) > 0,
  ).length;
  const cluster = ir.pods.filter((p) =>
    [p.ingress, p.egress].some((d) => d?.admin || d?.baseline),
  ).length;
  const counts = { rules, pods: ir.pods.length };
  const summary = `${ir.pods.length} local pod(s), ${isolated} isolated, ${
    cluster ? `${cluster} under ClusterNetworkPolicy, ` : ''
  }${rules} rule(s)`;
  const unknown = built.unknownPods.length
    ? `; isolated until their Pod is known again: ${built.unknownPods.join(', ')}`
    : '';
  if (built.problems.length === 0)
    return { ok: true, reason: 'Applied', message: `${summary}${unknown}`, ...counts };
  return {
    ok: false,
    reason: 'PolicyNotEnforceable',
    message: built.problems.map((p) => p.message).join('; '),
    ...counts,
  };
}

export function failedResult(
  reason: 'TranslateFailed' | 'ApplyFailed',
  error: unknown,
): PolicyResult {
  const why = error instanceof Error ? error.message : String(error);
  const what = reason === 'TranslateFailed' ? 'cannot translate' : 'nft failed';
  return {
    ok: false,
    reason,
    message: `${what}: ${why.slice(0, 2000)} (the previous rules stay in force)`,
  };
}

export function sameResult(a: PolicyResult | undefined, b: PolicyResult): boolean {
  return (
    a !== undefined &&
    a.ok === b.ok &&
    a.reason === b.reason &&
    a.message === b.message &&
    a.rules === b.rules &&
    a.pods === b.pods
  );
}
