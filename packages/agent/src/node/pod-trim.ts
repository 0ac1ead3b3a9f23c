// What the agent's cluster-wide pod cache keeps of a pod: only the fields flock reads, each
// bounded, and what replicas have in common shared (every agent holds every pod of the cluster,
// so one namespace's pods cost every node; docs/operations.md "A shared cluster").
import {
  ANYCAST_ANNOTATION,
  BGP_COMMUNITIES_ANNOTATION,
  CLAIM_KEY_ANNOTATION,
  IPV4_ANNOTATION,
  IP_ALGO_ANNOTATION,
  MAX_ANNOTATION_BYTES,
  OVERSIZE,
  OVER_LIMIT_LABEL,
  PINNED_IP_ANNOTATION,
  Pod,
  overLimitReason,
} from '@flock/api';
import { Interner } from '../core/interner.js';
import {
  trimmedPod,
  type Conditions,
  type Container,
  type Labels,
  type Owner,
  type RareFields,
} from './trimmed-pod.js';

export {
  MAX_ANNOTATION_BYTES,
  MAX_NAMED_PORTS,
  MAX_POD_LABELS,
  OVERSIZE,
  OVER_LIMIT_LABEL,
} from '@flock/api';

/** The pod annotations flock reads; any other (flock.fritzlab.net/* included) is not kept. */
const POD_ANNOTATIONS: ReadonlySet<string> = new Set([
  IP_ALGO_ANNOTATION,
  PINNED_IP_ANNOTATION,
  ANYCAST_ANNOTATION,
  BGP_COMMUNITIES_ANNOTATION,
  CLAIM_KEY_ANNOTATION,
  IPV4_ANNOTATION,
]);
/**
 * Why a cached pod's labels and named ports were not kept (undefined: they were). Such a pod
 * matches no selector: it is no peer of any rule, and on its own node it is isolated both ways
 * (policy/state.ts) — denied what it might have been allowed, never allowed what it is denied.
 */
export function overLimit(pod: Pod): string | undefined {
  return pod.metadata.labels?.[OVER_LIMIT_LABEL];
}

type Port = NonNullable<Container['ports']>[number];
type Metadata = Pod['metadata'];

// Shared, hence frozen: nothing may change one pod's copy under another.
const labelSets = new Interner<Labels>(50_000, 1024);
const portSets = new Interner<Container[]>(10_000, 1024);
const owners = new Interner<Owner[]>(50_000, 512);
const words = new Interner<string>(50_000, 253);
/** A namespace, node or phase name: one copy of each. */
const word = (w: string) => words.get(w, () => w);
const READY = new Map(
  ['True', 'False', 'Unknown'].map((status) => [
    status,
    Object.freeze([Object.freeze({ type: 'Ready', status })]) as unknown as Conditions,
  ]),
);

/** The Ready condition's status alone, shared. */
function readyCondition(status: string): Conditions {
  return READY.get(status) ?? [{ type: 'Ready', status }];
}
const NO_CONTAINERS: Container[] = Object.freeze([]) as unknown as Container[];

function sharedLabels(labels: Labels): Labels {
  return labelSets.get(JSON.stringify(labels), () => Object.freeze({ ...labels }));
}

/** Named ports (the only ones policy reads: a rule's port by name), as one container. */
function namedPorts(p: Pod): Port[] {
  const out: Port[] = [];
  for (const c of p.spec?.containers ?? [])
    for (const port of c.ports ?? [])
      if (port.name)
        out.push({
          name: port.name,
          containerPort: port.containerPort,
          ...(port.protocol ? { protocol: port.protocol } : {}),
        });
  return out;
}

function sharedContainers(ports: Port[]): Container[] {
  if (ports.length === 0) return NO_CONTAINERS;
  return portSets.get(
    JSON.stringify(ports),
    () =>
      Object.freeze([
        Object.freeze({ ports: Object.freeze(ports.map((port) => Object.freeze(port))) }),
      ]) as unknown as Container[],
  );
}

/** The controller's kind and name (claims/keys.ts); nothing else of the owner list. */
function controllerOf(m: Metadata): Owner[] | undefined {
  const owner = (m.ownerReferences ?? []).find((r) => r['controller'] === true);
  if (!owner) return undefined;
  const kind = String(owner['kind']);
  const name = String(owner['name']);
  return owners.get(
    `${kind}/${name}`,
    () => Object.freeze([Object.freeze({ kind, name, controller: true })]) as unknown as Owner[],
  );
}

/**
 * What the cache keeps of a pod: identity, labels, flock's own annotations, its controller,
 * node, named ports, phase, addresses, the Ready condition. Trimmed as it enters the cache, so
 * 150,000 pods cost a fraction of their objects (no managedFields, no last-applied
 * configuration, replicas sharing their labels) and a change costs no re-parsing. One object
 * a pod (trimmed-pod.ts); what it shares with other pods is frozen.
 */
export function trimPod(p: Pod): Pod {
  const m = p.metadata;
  const annotations = Object.entries(m.annotations ?? {})
    .filter(([k]) => POD_ANNOTATIONS.has(k))
    .map(([k, v]) => [k, v.length > MAX_ANNOTATION_BYTES ? OVERSIZE : v] as const);
  const ports = namedPorts(p);
  const over = overLimitReason(Object.keys(m.labels ?? {}).length, ports.length);
  const hash = m.labels?.['pod-template-hash'];
  const labels = over
    ? { [OVER_LIMIT_LABEL]: over, ...(hash === undefined ? {} : { 'pod-template-hash': hash }) }
    : m.labels;
  const rare: RareFields = {};
  if (annotations.length) rare.annotations = Object.fromEntries(annotations);
  if (m.deletionTimestamp) rare.deletionTimestamp = m.deletionTimestamp;
  // The pod uses the node's addresses: not a pod peer (see docs).
  if (p.spec?.hostNetwork === true) rare.hostNetwork = true;
  const s = p.status;
  const ips = s?.podIPs?.length ? s.podIPs.map((i) => i.ip) : [];
  // podIP is podIPs[0] when podIPs is there: one copy.
  if (!ips.length && s?.podIP) rare.podIP = s.podIP;
  const ready = s?.conditions?.find((c) => c.type === 'Ready');
  return trimmedPod({
    name: m.name,
    namespace: word(m.namespace),
    uid: m.uid || undefined,
    labels: labels ? sharedLabels(labels) : undefined,
    ownerReferences: controllerOf(m),
    nodeName: p.spec?.nodeName ? word(p.spec.nodeName) : undefined,
    containers: over ? NO_CONTAINERS : sharedContainers(ports),
    phase: s?.phase ? word(s.phase) : undefined,
    conditions: ready ? readyCondition(ready.status) : undefined,
    ips,
    rare: Object.keys(rare).length ? rare : undefined,
  });
}

/** A pod as the cache holds it: parsed, then trimmed. */
export const CachedPod = Pod.transform(trimPod);
