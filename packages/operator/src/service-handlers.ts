// Which Services to reconcile when something changes (keys are namespace/name; the reconcile
// is level-triggered, so over-enqueueing only costs a look): a LoadBalancer Service itself (and
// one that shows an ingress: it may have stopped being one), a Service with external IPs; a Namespace's LoadBalancers when
// its labels change (grants select by them); every LoadBalancer when a Pool changes; and the
// Services a claim lists — with every waiting Service when an address is let go or freed.
import type { Pool, Service } from '@flock/api';
import { objectKey, type Cache, type Controller, type KubeObject } from '@flock/kube';
import { deepEqual } from './equal.js';
import { inRanges } from './service-addresses.js';
import type { Namespace } from './service-scope.js';

export interface ServiceHandlerInput {
  services: Cache<Service>;
  namespaces: Cache<Namespace>;
  pools: Cache<Pool>;
  /** Every AddressClaim, unparsed. */
  claims: Cache<KubeObject>;
  controller: Controller;
  /** The Services waiting for an address. */
  waiting: () => Iterable<string>;
}

/** Index of the Service cache: namespace → its Services. */
export const BY_NAMESPACE = 'namespace';

const isLoadBalancer = (svc: Service) => svc.spec?.type === 'LoadBalancer';
const mayHaveAddress = (svc: Service) =>
  isLoadBalancer(svc) ||
  (svc.status?.loadBalancer?.ingress?.length ?? 0) > 0 ||
  (svc.spec?.externalIPs?.length ?? 0) > 0;

/** The Services (keys) a raw claim lists: Service claims only, read without trusting it. */
function listed(obj: KubeObject): string[] {
  const spec = (obj as { spec?: { kind?: unknown; namespace?: unknown; services?: unknown } }).spec;
  if (spec?.kind !== 'Service') return [];
  if (typeof spec.namespace !== 'string' || !Array.isArray(spec.services)) return [];
  return spec.services
    .filter((s): s is string => typeof s === 'string')
    .map((s) => `${spec.namespace as string}/${s}`);
}

/** Subscribe the Service controller; returns the unsubscribe function. */
export function wireServiceHandlers(o: ServiceHandlerInput): () => void {
  const { controller } = o;
  const enqueue = (keys: Iterable<string>) => {
    for (const k of keys) controller.enqueue(k);
  };
  const loadBalancers = (list: readonly Service[]) =>
    list.filter(mayHaveAddress).map((s) => objectKey(s));
  const inNamespace = (ns: Namespace) =>
    enqueue(loadBalancers(o.services.byIndex(BY_NAMESPACE, ns.metadata.name)));
  const all = () => enqueue(loadBalancers(o.services.list()));
  const claimChanged = (before: KubeObject | undefined, after: KubeObject | undefined) => {
    const was = before ? listed(before) : [];
    const is = after ? listed(after) : [];
    enqueue(new Set([...was, ...is]));
    // An address let go (or deleted) may be what a waiting Service needs.
    if (is.length < was.length || after === undefined) enqueue([...o.waiting()]);
  };
  const offs = [
    controller.watch(o.services, (svc) => (mayHaveAddress(svc) ? objectKey(svc) : undefined)),
    o.namespaces.addHandler({
      onAdd: inNamespace,
      onUpdate: (a, b) => {
        if (!deepEqual(a.metadata.labels ?? {}, b.metadata.labels ?? {})) inNamespace(b);
      },
      onDelete: inNamespace,
    }),
    o.pools.addHandler({
      onAdd: all,
      onUpdate: (a, b) => {
        if (!deepEqual(a.spec, b.spec) || a.metadata.uid !== b.metadata.uid) all();
      },
      onDelete: all,
    }),
    o.claims.addHandler({
      onAdd: (c) => claimChanged(undefined, c),
      onUpdate: (a, b) => claimChanged(a, b),
      onDelete: (c) => claimChanged(c, undefined),
    }),
  ];
  return () => offs.forEach((off) => off());
}

/** The address of a raw AddressClaim, read without trusting it. */
const addressOf = (obj: KubeObject): string | undefined => {
  const a = (obj as { spec?: { address?: unknown } }).spec?.address;
  return typeof a === 'string' ? a : undefined;
};

/**
 * The pools' status counts the Service addresses inside their ranges: a claim's change
 * enqueues the pools whose Service ranges hold its address.
 */
export function wirePoolClaimHandlers(
  pools: () => readonly Pool[],
  claims: Cache<KubeObject>,
  controller: Controller,
): () => void {
  const enqueue = (obj: KubeObject) => {
    const address = addressOf(obj);
    if (address === undefined) return;
    for (const p of pools())
      if (inRanges(address, p.spec.services?.cidrs ?? [])) controller.enqueue(p.metadata.name);
  };
  return claims.addHandler(
    { onAdd: enqueue, onUpdate: (_, b) => enqueue(b), onDelete: enqueue },
    { replay: false },
  );
}
