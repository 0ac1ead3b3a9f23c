// What the agent's caches keep of a NetworkPolicy or ClusterNetworkPolicy: its identity and its
// spec — no managedFields, annotations (last-applied configuration) or status — and no spec past
// MAX_POLICY_SPEC_BYTES. Of an over-limit policy only what its fail-closed stand-in reads is
// kept, marked `overLimit`; the checkers (validate.ts, cluster-validate.ts) enforce the stand-in
// and report why. Never skipped: a policy the cache dropped would allow what it denies.
import {
  CLUSTER_NETWORK_POLICIES,
  NETWORK_POLICIES,
  apiVersionOf,
  type KubeObject,
  type ResourceRef,
} from '@flock/kube';
import { z } from 'zod';
import { STAND_IN_RULES } from './cluster-validate.js';
import { standInSpec } from './validate.js';

/**
 * Longest spec kept (as JSON text): far above a real policy (a hundred peers and ports take a
 * few KiB), far below the 1.5 MiB an API object may have, so a namespace cannot make every
 * agent hold megabytes per policy. Also the longest podSelector or subject a stand-in keeps.
 */
export const MAX_POLICY_SPEC_BYTES = 64 * 1024;

/** A policy as cached: identity, spec; `overLimit` says why the spec is only a stand-in's. */
export interface KeptPolicy extends KubeObject {
  spec?: unknown;
  overLimit?: string;
}

type Spec = Record<string, unknown>;
const small = (value: unknown) =>
  value === undefined || JSON.stringify(value).length <= MAX_POLICY_SPEC_BYTES;

function keep(
  raw: Record<string, unknown>,
  ref: ResourceRef,
  standIn: (spec: Spec) => Spec,
): KeptPolicy {
  const apiVersion = apiVersionOf(ref);
  const kind = ref.kind;
  const m = (raw['metadata'] ?? {}) as Record<string, unknown>;
  const text = (k: string) => (typeof m[k] === 'string' ? { [k]: m[k] } : {});
  const metadata = {
    name: String(m['name']),
    ...text('namespace'),
    ...text('uid'),
    ...text('resourceVersion'),
  } as KubeObject['metadata'];
  const spec = (raw['spec'] ?? {}) as Spec;
  const length = JSON.stringify(spec).length;
  if (length <= MAX_POLICY_SPEC_BYTES) return { apiVersion, kind, metadata, spec };
  return {
    apiVersion,
    kind,
    metadata,
    spec: standIn(spec),
    overLimit: `${length.toLocaleString('en-US')} bytes (flock keeps at most ${MAX_POLICY_SPEC_BYTES.toLocaleString('en-US')})`,
  };
}

const Raw = z.looseObject({ metadata: z.looseObject({}) });

/** A NetworkPolicy as the cache holds it. */
export const CachedNetworkPolicy = Raw.transform((raw) =>
  keep(raw, NETWORK_POLICIES, (spec) =>
    standInSpec({ ...spec, podSelector: small(spec['podSelector']) ? spec['podSelector'] : {} }),
  ),
);

/** The action of each rule (the stand-in reads nothing else of them). */
function actions(rules: unknown): Spec[] {
  if (!Array.isArray(rules)) return [];
  return rules.slice(0, STAND_IN_RULES).map((rule: unknown) => {
    const action = (rule as { action?: unknown } | null)?.action;
    return typeof action === 'string' && action.length <= 16 ? { action } : {};
  });
}

/** A ClusterNetworkPolicy as the cache holds it. */
export const CachedClusterNetworkPolicy = Raw.transform((raw) =>
  keep(raw, CLUSTER_NETWORK_POLICIES, (spec) => ({
    ...(typeof spec['tier'] === 'string' && spec['tier'].length <= 16
      ? { tier: spec['tier'] }
      : {}),
    ...(typeof spec['priority'] === 'number' ? { priority: spec['priority'] } : {}),
    ...(small(spec['subject']) ? { subject: spec['subject'] } : {}),
    ingress: actions(spec['ingress']),
    egress: actions(spec['egress']),
  })),
);
