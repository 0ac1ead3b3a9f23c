// The input of translate(): the subset of v1 Namespace, v1 Pod and networking.k8s.io/v1
// NetworkPolicy that policy enforcement reads, plus which pods live on this node. Objects are
// loose (the rest of a Kubernetes object passes through), but inside a NetworkPolicy spec every
// field must be known: a field flock does not understand could narrow what the policy allows,
// so it is refused rather than ignored.
import {
  ClusterNetworkPolicy,
  HostPort,
  MAX_HOST_PORTS,
  IpAddress,
  LabelSelector,
  ObjectMeta,
  Pod,
  Protocol,
} from '@flock/api';
import { z } from 'zod';
import { cidrInterval, contains } from './addresses.js';
import { NetpolError, formatPath, type NetpolIssue } from './errors.js';

/** IANA_SVC_NAME, the grammar of a named port (at most 15 characters, at least one letter). */
const PORT_NAME = /^(?=.*[a-z])[a-z0-9]([a-z0-9-]{0,13}[a-z0-9])?$/;
/** Interface names flock writes into nft scripts: Linux names without quotes or spaces. */
const INTERFACE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,14}$/;

const portNumber = z.int().min(1).max(65535);

export const Namespace = z.looseObject({ metadata: ObjectMeta });
export type Namespace = z.infer<typeof Namespace>;

const NamespacedMeta = ObjectMeta.extend({ namespace: z.string().min(1) });

// Pods are @flock/api's Pod, the one schema of what flock reads of a pod.

const IPBlock = z
  .strictObject({ cidr: z.string(), except: z.array(z.string()).nullish() })
  .superRefine((block, ctx) => {
    const base = cidrInterval(block.cidr);
    if (!base) {
      ctx.addIssue({
        code: 'custom',
        path: ['cidr'],
        message: `${JSON.stringify(block.cidr)} is not a CIDR`,
      });
      return;
    }
    (block.except ?? []).forEach((cut, i) => {
      const parsed = cidrInterval(cut);
      if (!parsed || parsed.family !== base.family || !contains(base.interval, parsed.interval)) {
        ctx.addIssue({
          code: 'custom',
          path: ['except', i],
          message: `${JSON.stringify(cut)} must be a CIDR inside ${block.cidr}`,
        });
      }
    });
  });

const Peer = z
  .strictObject({
    podSelector: LabelSelector.nullish(),
    namespaceSelector: LabelSelector.nullish(),
    ipBlock: IPBlock.nullish(),
  })
  .superRefine((peer, ctx) => {
    const selectors = peer.podSelector != null || peer.namespaceSelector != null;
    if (peer.ipBlock != null && selectors) {
      ctx.addIssue({
        code: 'custom',
        message: 'ipBlock cannot be combined with podSelector or namespaceSelector',
      });
    } else if (peer.ipBlock == null && !selectors) {
      ctx.addIssue({
        code: 'custom',
        message: 'a peer needs podSelector, namespaceSelector or ipBlock',
      });
    }
  });
export type Peer = z.infer<typeof Peer>;

const PolicyPort = z
  .strictObject({
    protocol: Protocol.nullish(),
    port: z.union([portNumber, z.string()]).nullish(),
    endPort: portNumber.nullish(),
  })
  .superRefine((p, ctx) => {
    if (typeof p.port === 'string' && !PORT_NAME.test(p.port)) {
      ctx.addIssue({
        code: 'custom',
        path: ['port'],
        message: `${JSON.stringify(p.port)} is neither a port number nor a port name (IANA_SVC_NAME)`,
      });
    }
    if (p.endPort != null) {
      if (typeof p.port !== 'number') {
        ctx.addIssue({
          code: 'custom',
          path: ['endPort'],
          message: 'endPort needs a numeric port',
        });
      } else if (p.endPort < p.port) {
        ctx.addIssue({
          code: 'custom',
          path: ['endPort'],
          message: `endPort ${p.endPort} is below port ${p.port}`,
        });
      }
    }
  });
export type PolicyPort = z.infer<typeof PolicyPort>;

const IngressRule = z.strictObject({
  from: z.array(Peer).nullish(),
  ports: z.array(PolicyPort).nullish(),
});
const EgressRule = z.strictObject({
  to: z.array(Peer).nullish(),
  ports: z.array(PolicyPort).nullish(),
});

export const NetworkPolicy = z.looseObject({
  metadata: NamespacedMeta,
  spec: z.strictObject({
    podSelector: LabelSelector,
    policyTypes: z.array(z.enum(['Ingress', 'Egress'])).nullish(),
    ingress: z.array(IngressRule).nullish(),
    egress: z.array(EgressRule).nullish(),
  }),
});
export type NetworkPolicy = z.infer<typeof NetworkPolicy>;

/** A Node as a ClusterNetworkPolicy `nodes` peer reads it: labels and status.addresses. */
export const Node = z.looseObject({
  metadata: ObjectMeta,
  status: z
    .looseObject({
      // Every address that parses as IP counts, whatever its type (the type is not read).
      addresses: z
        .array(z.looseObject({ type: z.string().optional(), address: z.string() }))
        .nullish(),
    })
    .nullish(),
});
export type Node = z.infer<typeof Node>;

export { ClusterNetworkPolicy };

export const LocalPod = z.strictObject({
  namespace: z.string().min(1),
  name: z.string().min(1),
  interface: z
    .string()
    .regex(INTERFACE_NAME, 'must be an interface name (letters, digits, _ . -, at most 15)'),
  /** Anycast source addresses the pod may use; when absent, the pod's anycast annotation. */
  anycast: z.array(IpAddress).optional(),
  /** Node addresses and ports DNATed to the pod (hostPort). */
  hostPorts: z.array(HostPort).max(MAX_HOST_PORTS).optional(),
});
export type LocalPod = z.infer<typeof LocalPod>;

/** A CIDR of either family (host bits allowed, as the NodeConfigs' ranges are written). */
const Cidr = z.string().refine((c) => cidrInterval(c) !== undefined, { message: 'must be a CIDR' });

export const State = z.looseObject({
  namespaces: z.array(Namespace).default([]),
  pods: z.array(Pod).default([]),
  policies: z.array(NetworkPolicy).default([]),
  /** policy.networking.k8s.io/v1alpha2 ClusterNetworkPolicies (tiers Admin and Baseline). */
  clusterPolicies: z.array(ClusterNetworkPolicy).default([]),
  /** Nodes, for ClusterNetworkPolicy `nodes` peers (their status.addresses). */
  nodes: z.array(Node).default([]),
  local: z.array(LocalPod).default([]),
  /**
   * Where the cluster's pods have their addresses. An address in them that no live pod of the
   * state has belongs to a pod this node does not know yet (or no pod): ClusterNetworkPolicy
   * Deny rules with pod or namespace peers treat it as matching (fail closed while a peer is
   * unknown). Empty: no such rule.
   */
  podRanges: z.array(Cidr).default([]),
});
export type State = z.infer<typeof State>;
/** What callers build (defaults not applied yet). */
export type StateInput = z.input<typeof State>;

const KIND_OF: Record<string, string> = {
  namespaces: 'namespace',
  pods: 'pod',
  policies: 'networkpolicy',
  clusterPolicies: 'clusternetworkpolicy',
  nodes: 'node',
  local: 'local',
  podRanges: 'pod range',
};

/** `networkpolicy ns/name` for an issue inside state.policies[i], from the raw input. */
function objectName(raw: unknown, list: string, index: number): string {
  const kind = KIND_OF[list] ?? list;
  const item = (raw as Record<string, unknown[] | undefined>)?.[list]?.[index] as
    Record<string, unknown> | undefined;
  if (list === 'local') {
    const ns = item?.['namespace'];
    const name = item?.['name'];
    return typeof ns === 'string' && typeof name === 'string'
      ? `local pod ${ns}/${name}`
      : `local[${index}]`;
  }
  const meta = item?.['metadata'] as Record<string, unknown> | undefined;
  const name = meta?.['name'];
  const ns = meta?.['namespace'];
  if (typeof name !== 'string') return `${kind} ${list}[${index}]`;
  return typeof ns === 'string' && kind !== 'namespace'
    ? `${kind} ${ns}/${name}`
    : `${kind} ${name}`;
}

/** Validate the input; every problem names its object and field. */
export function parseState(raw: unknown): State {
  const parsed = State.safeParse(raw);
  if (parsed.success) return parsed.data;
  const issues: NetpolIssue[] = parsed.error.issues.slice(0, 20).map((issue) => {
    const [list, index, ...rest] = issue.path;
    if (typeof list === 'string' && typeof index === 'number') {
      return {
        object: objectName(raw, list, index),
        field: formatPath(rest),
        message: issue.message,
      };
    }
    return { object: 'state', field: formatPath(issue.path), message: issue.message };
  });
  throw new NetpolError(issues);
}
