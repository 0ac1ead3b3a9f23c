// Which Services flock gives addresses to, of which families, and from which ranges: pure
// functions of a Service, its Namespace's labels and the Pools.
//  - In scope: type LoadBalancer, and spec.loadBalancerClass flock.fritzlab.net/lb — or unset,
//    when the operator serves unset classes. Any other class is another controller's: flock
//    never touches such a Service, not even its status.
//  - Families: spec.ipFamilies under spec.ipFamilyPolicy (SingleStack: the first;
//    PreferDualStack, RequireDualStack: all of them, the latter refusing a missing one).
//  - Ranges: the Pools' services.grants that cover the namespace (by its labels, where
//    kubernetes.io/metadata.name cannot be faked) and, with a serviceSelector, the Service.
import {
  LOAD_BALANCER_CLASS,
  matchesSelector,
  splitCidr,
  type Family,
  type FloatingGrant,
  type Pool,
  type Service,
} from '@flock/api';
import { z } from 'zod';

/** The part of a Namespace the controller reads: its labels. */
export const NamespaceSchema = z.object({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: z.object({
    name: z.string().min(1),
    resourceVersion: z.string().optional(),
    labels: z.record(z.string(), z.string()).optional(),
  }),
});
export type Namespace = z.infer<typeof NamespaceSchema>;

/**
 * - `serve`: flock assigns its addresses;
 * - `foreign`: another load balancer's (its class): never touched;
 * - `none`: not (or no longer) a LoadBalancer of a class flock serves, or gone: what flock
 *   assigned is released and taken out of its status.
 */
export type Scope = 'serve' | 'foreign' | 'none';

export function serviceScope(svc: Service | undefined, serveUnsetClass: boolean): Scope {
  if (!svc || svc.metadata.deletionTimestamp) return 'none';
  if (svc.spec?.type !== 'LoadBalancer') return 'none';
  return servedClass(svc, serveUnsetClass) ? 'serve' : 'foreign';
}

/** Is the Service's load balancer class flock's (whatever its type and state)? */
export function servedClass(svc: Service, serveUnsetClass: boolean): boolean {
  const cls = svc.spec?.loadBalancerClass;
  return cls === LOAD_BALANCER_CLASS || (cls === undefined && serveUnsetClass);
}

export interface Families {
  /** In the Service's order (its first family first). */
  families: Family[];
  /** RequireDualStack: a family without an address is a refusal. */
  required: boolean;
}

const FAMILY = { IPv6: 6, IPv4: 4 } as const;

/** The families a Service wants addresses of (absent ipFamilies: both, IPv6 first). */
export function wantedFamilies(svc: Service): Families {
  const listed = svc.spec?.ipFamilies?.map((f) => FAMILY[f]) ?? [6, 4];
  const policy = svc.spec?.ipFamilyPolicy ?? 'SingleStack';
  if (policy === 'SingleStack') return { families: listed.slice(0, 1), required: false };
  return { families: listed, required: policy === 'RequireDualStack' };
}

/** Ranges of one family a pool's covering grants give a Service. */
export interface Offer {
  pool: string;
  family: Family;
  /** Canonical CIDRs, in the pool's order, no duplicates. */
  cidrs: string[];
}

const covers = (g: FloatingGrant, ns: Namespace | undefined, svc: Service) =>
  (g.anyNamespace === true || matchesSelector(g.namespaceSelector, ns?.metadata.labels ?? {})) &&
  // A namespace that is not (yet) in the cache has no labels: only anyNamespace covers it.
  (g.namespaceSelector === undefined || ns !== undefined) &&
  matchesSelector(g.serviceSelector, svc.metadata.labels);

/**
 * What every pool (by name) offers the Service, per family: the ranges of its services.grants
 * that cover it. `usable` leaves out pools whose Service ranges are refused or withdrawn.
 */
export function offers(
  pools: readonly Pool[],
  ns: Namespace | undefined,
  svc: Service,
  usable: (pool: string) => boolean,
): Offer[] {
  const out: Offer[] = [];
  const byName = [...pools].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1));
  for (const pool of byName) {
    const list = pool.spec.services;
    if (!list || !usable(pool.metadata.name)) continue;
    const cidrs = [
      ...new Set(
        (list.grants ?? []).filter((g) => covers(g, ns, svc)).flatMap((g) => g.cidrs ?? list.cidrs),
      ),
    ];
    for (const family of [6, 4] as const) {
      const mine = cidrs.filter((c) => splitCidr(c)?.family === family);
      if (mine.length) out.push({ pool: pool.metadata.name, family, cidrs: mine });
    }
  }
  return out;
}

/** "namespace shop (and Service web's labels)", for messages. */
export function grantSubject(svc: Service): string {
  return `namespace ${svc.metadata.namespace} (and Service ${svc.metadata.name}'s labels)`;
}
