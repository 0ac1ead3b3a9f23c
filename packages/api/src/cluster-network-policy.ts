// ClusterNetworkPolicy (policy.networking.k8s.io/v1alpha2, sigs.k8s.io/network-policy-api v0.3.0)
// as flock reads it. The CRD is sig-network's, not flock's: these schemas only validate what the
// API server sends. Inside the spec every field must be known (strict objects): a field flock
// does not understand could change what a rule matches, so it is refused, and the agent falls
// back to the API's own "fail closed" reading of the rule (Accept matches nothing, Deny and Pass
// deny everything). Field names and limits follow apis/v1alpha2/clusternetworkpolicy_types.go.
import { z } from 'zod';
import { LabelSelector, ObjectMeta } from './meta.js';
import { isNetworkAddress, splitCidr } from './net.js';
import { formatPath } from './path.js';

export const CLUSTER_NETWORK_POLICY_GROUP = 'policy.networking.k8s.io';
export const CLUSTER_NETWORK_POLICY_VERSION = 'v1alpha2';
export const CLUSTER_NETWORK_POLICY_PLURAL = 'clusternetworkpolicies';

export const Tier = z.enum(['Admin', 'Baseline']);
export type Tier = z.infer<typeof Tier>;

export const RuleAction = z.enum(['Accept', 'Deny', 'Pass']);
export type RuleAction = z.infer<typeof RuleAction>;

const portNumber = z.int().min(1).max(65535);

const Port = z
  .strictObject({
    number: portNumber.nullish(),
    range: z
      .strictObject({ start: portNumber, end: portNumber })
      .refine((r) => r.start < r.end, 'Start port must be less than End port')
      .nullish(),
  })
  .refine((p) => (p.number != null) !== (p.range != null), {
    message: 'exactly one of number and range must be set',
  });

const ProtocolPort = z.strictObject({ destinationPort: Port });

/** IANA_SVC_NAME: at most 15 characters, at least one letter. */
const PORT_NAME = /^(?=.*[a-z])[a-z0-9]([a-z0-9-]{0,13}[a-z0-9])?$/;

/** One entry of `protocols`: exactly one field. */
export const CnpProtocol = z
  .strictObject({
    tcp: ProtocolPort.nullish(),
    udp: ProtocolPort.nullish(),
    sctp: ProtocolPort.nullish(),
    destinationNamedPort: z
      .string()
      .regex(PORT_NAME, 'must be a port name (IANA_SVC_NAME)')
      .nullish(),
  })
  .refine((p) => Object.values(p).filter((v) => v != null).length === 1, {
    message: 'exactly one of tcp, udp, sctp and destinationNamedPort must be set',
  });
export type CnpProtocol = z.infer<typeof CnpProtocol>;

/** Pods selected by namespace AND pod labels (both empty: every pod). */
export const NamespacedPod = z.strictObject({
  namespaceSelector: LabelSelector.nullish(),
  podSelector: LabelSelector,
});
export type NamespacedPod = z.infer<typeof NamespacedPod>;

/** A CIDR whose host bits are zero (the CRD's `cidr(self) == cidr(self).masked()`). */
const Cidr = z
  .string()
  .max(43)
  .refine((s) => splitCidr(s) !== undefined && isNetworkAddress(s), 'Invalid CIDR format provided');

const DOMAIN_NAME =
  /^(\*\.)?([a-zA-Z0-9]([-a-zA-Z0-9_]*[a-zA-Z0-9])?\.)+[a-zA-Z0-9]([-a-zA-Z0-9_]*[a-zA-Z0-9])?\.?$/;

const exactlyOne = <T extends Record<string, unknown>>(p: T) =>
  Object.values(p).filter((v) => v != null).length === 1;

export const CnpIngressPeer = z
  .strictObject({ namespaces: LabelSelector.nullish(), pods: NamespacedPod.nullish() })
  .refine(exactlyOne, { message: 'exactly one of namespaces and pods must be set' });
export type CnpIngressPeer = z.infer<typeof CnpIngressPeer>;

export const CnpEgressPeer = z
  .strictObject({
    namespaces: LabelSelector.nullish(),
    pods: NamespacedPod.nullish(),
    nodes: LabelSelector.nullish(),
    networks: z.array(Cidr).min(1).max(25).nullish(),
    domainNames: z
      .array(z.string().regex(DOMAIN_NAME, 'must be a domain name'))
      .min(1)
      .max(25)
      .nullish(),
  })
  .refine(exactlyOne, {
    message: 'exactly one of namespaces, pods, nodes, networks and domainNames must be set',
  });
export type CnpEgressPeer = z.infer<typeof CnpEgressPeer>;

const ruleName = z.string().max(100).nullish();

export const CnpIngressRule = z.strictObject({
  name: ruleName,
  action: RuleAction,
  from: z.array(CnpIngressPeer).min(1).max(25),
  protocols: z.array(CnpProtocol).min(1).max(25).nullish(),
});
export type CnpIngressRule = z.infer<typeof CnpIngressRule>;

export const CnpEgressRule = z
  .strictObject({
    name: ruleName,
    action: RuleAction,
    to: z.array(CnpEgressPeer).min(1).max(25),
    protocols: z.array(CnpProtocol).min(1).max(25).nullish(),
  })
  .refine(
    (r) =>
      !(
        r.to.some((p) => p.networks || p.nodes || p.domainNames) &&
        (r.protocols ?? []).some((p) => p.destinationNamedPort != null)
      ),
    {
      message:
        'networks/nodes/domainNames peer cannot be set with namedPorts since there are no namedPorts for networks/nodes/domainNames',
    },
  );
export type CnpEgressRule = z.infer<typeof CnpEgressRule>;

export const CnpSubject = z
  .strictObject({ namespaces: LabelSelector.nullish(), pods: NamespacedPod.nullish() })
  .refine(exactlyOne, { message: 'exactly one of namespaces and pods must be set' });
export type CnpSubject = z.infer<typeof CnpSubject>;

export const ClusterNetworkPolicySpec = z.strictObject({
  tier: Tier,
  priority: z.int().min(0).max(1000),
  subject: CnpSubject,
  ingress: z.array(CnpIngressRule).max(25).nullish(),
  egress: z.array(CnpEgressRule).max(25).nullish(),
});
export type ClusterNetworkPolicySpec = z.infer<typeof ClusterNetworkPolicySpec>;

export const ClusterNetworkPolicy = z.looseObject({
  apiVersion: z.string().nullish(),
  kind: z.string().nullish(),
  metadata: ObjectMeta,
  spec: ClusterNetworkPolicySpec,
  status: z
    .looseObject({ conditions: z.array(z.looseObject({ type: z.string() })).nullish() })
    .nullish(),
});
export type ClusterNetworkPolicy = z.infer<typeof ClusterNetworkPolicy>;

/** Can flock enforce this ClusterNetworkPolicy as written? (The same on every node.) */
export type Enforceability =
  | { ok: true; policy: ClusterNetworkPolicy }
  | { ok: false; reason: 'DomainNamesNotEnforced'; policy: ClusterNetworkPolicy; fields: string[] }
  | { ok: false; reason: 'Unreadable'; issues: { field: string; message: string }[] };

export function enforceability(raw: unknown): Enforceability {
  const parsed = ClusterNetworkPolicy.safeParse(raw);
  if (!parsed.success)
    return {
      ok: false,
      reason: 'Unreadable',
      issues: parsed.error.issues
        .slice(0, 5)
        .map((i) => ({ field: formatPath(i.path), message: i.message })),
    };
  const fields = (parsed.data.spec.egress ?? []).flatMap((r, i) =>
    r.to.some((p) => p.domainNames) ? [`spec.egress[${i}]`] : [],
  );
  if (fields.length === 0) return { ok: true, policy: parsed.data };
  return { ok: false, reason: 'DomainNamesNotEnforced', policy: parsed.data, fields };
}
