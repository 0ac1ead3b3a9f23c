// An index of the cluster state that translate() queries: namespaces with their labels, pods
// with parsed addresses and named ports, and label-selector results cached per selector so a
// selector shared by many policies is evaluated once.
import {
  ANYCAST_ANNOTATION,
  matchesSelector,
  parseAnycast,
  type Family,
  type LabelSelector,
} from '@flock/api';
import { addressInterval } from './addresses.js';
import { fail } from './errors.js';
import type { Protocol, State } from './state.js';

/** Label every namespace carries (set by the API server since Kubernetes 1.21). */
export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

export interface PodAddress {
  family: Family;
  n: bigint;
}

export interface NamedPort {
  name: string;
  protocol: Protocol;
  port: number;
}

export interface PodInfo {
  /** `namespace/name` */
  key: string;
  namespace: string;
  labels: Record<string, string>;
  addresses: PodAddress[];
  namedPorts: NamedPort[];
  annotations: Record<string, string>;
  /** Running or pending: a Succeeded or Failed pod's addresses may already belong to another pod. */
  live: boolean;
}

function podAddresses(key: string, ips: string[]): PodAddress[] {
  const seen = new Set<bigint>();
  const out: PodAddress[] = [];
  for (const ip of ips) {
    const parsed = addressInterval(ip);
    if (!parsed) fail(`pod ${key}`, 'status.podIPs', `${JSON.stringify(ip)} is not an IP address`);
    if (seen.has(parsed.interval.lo)) continue;
    seen.add(parsed.interval.lo);
    out.push({ family: parsed.family, n: parsed.interval.lo });
  }
  return out;
}

export class Cluster {
  readonly namespaceLabels = new Map<string, Record<string, string>>();
  readonly pods = new Map<string, PodInfo>();
  private readonly podsByNamespace = new Map<string, PodInfo[]>();
  private readonly namespaceCache = new Map<string, string[]>();
  private readonly podCache = new Map<string, PodInfo[]>();

  constructor(state: State) {
    for (const ns of state.namespaces) {
      const name = ns.metadata.name;
      if (this.namespaceLabels.has(name))
        fail(`namespace ${name}`, 'metadata.name', 'listed twice');
      this.namespaceLabels.set(name, { ...ns.metadata.labels, [NAMESPACE_NAME_LABEL]: name });
      this.podsByNamespace.set(name, []);
    }
    for (const pod of state.pods) {
      const { namespace, name } = pod.metadata;
      const key = `${namespace}/${name}`;
      if (this.pods.has(key)) fail(`pod ${key}`, 'metadata.name', 'listed twice');
      const list = this.podsByNamespace.get(namespace);
      if (!list)
        fail(
          `pod ${key}`,
          'metadata.namespace',
          `namespace ${JSON.stringify(namespace)} is not in the state's namespaces`,
        );
      const ips =
        pod.status?.podIPs?.map((p) => p.ip) ?? (pod.status?.podIP ? [pod.status.podIP] : []);
      const info: PodInfo = {
        key,
        namespace,
        labels: pod.metadata.labels ?? {},
        addresses: podAddresses(key, ips),
        namedPorts: (pod.spec?.containers ?? []).flatMap((c) =>
          (c.ports ?? []).flatMap((p) =>
            p.name ? [{ name: p.name, protocol: p.protocol ?? 'TCP', port: p.containerPort }] : [],
          ),
        ),
        annotations: pod.metadata.annotations ?? {},
        live: pod.status?.phase !== 'Succeeded' && pod.status?.phase !== 'Failed',
      };
      this.pods.set(key, info);
      list.push(info);
    }
  }

  hasNamespace(name: string): boolean {
    return this.namespaceLabels.has(name);
  }

  /** Live pods of one namespace. */
  podsIn(namespace: string): PodInfo[] {
    return (this.podsByNamespace.get(namespace) ?? []).filter((p) => p.live);
  }

  /** Every live pod of the cluster, in state order. */
  allLivePods(): PodInfo[] {
    return [...this.pods.values()].filter((p) => p.live);
  }

  /** Names of the namespaces a namespaceSelector selects. */
  selectNamespaces(selector: LabelSelector): string[] {
    const key = JSON.stringify(selector);
    let hit = this.namespaceCache.get(key);
    if (!hit) {
      hit = [...this.namespaceLabels]
        .filter(([, labels]) => matchesSelector(selector, labels))
        .map(([n]) => n);
      this.namespaceCache.set(key, hit);
    }
    return hit;
  }

  /** Live pods of `namespace` matched by `selector` (absent selector: all of them). */
  selectPods(namespace: string, selector: LabelSelector | null | undefined): PodInfo[] {
    const key = `${namespace}\0${JSON.stringify(selector ?? {})}`;
    let hit = this.podCache.get(key);
    if (!hit) {
      hit = this.podsIn(namespace).filter((p) => matchesSelector(selector ?? undefined, p.labels));
      this.podCache.set(key, hit);
    }
    return hit;
  }

  /** A peer's pods: podSelector in the policy's namespace, or in every namespace the namespaceSelector picks. */
  selectPeerPods(
    policyNamespace: string,
    podSelector: LabelSelector | null | undefined,
    namespaceSelector: LabelSelector | null | undefined,
  ): PodInfo[] {
    const namespaces = namespaceSelector
      ? this.selectNamespaces(namespaceSelector)
      : [policyNamespace];
    return namespaces.flatMap((ns) => this.selectPods(ns, podSelector));
  }

  /** Anycast addresses a local pod may send from: given by the agent, else its annotation. */
  anycastOf(pod: PodInfo, given: string[] | undefined): string[] {
    if (given) return given;
    const parsed = parseAnycast(pod.annotations[ANYCAST_ANNOTATION]);
    if (parsed && !parsed.ok)
      fail(`pod ${pod.key}`, `metadata.annotations["${ANYCAST_ANNOTATION}"]`, parsed.error);
    return parsed?.value ?? [];
  }
}
