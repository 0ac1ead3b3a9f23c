// A Service as flock reads it: the fields the operator's Service address controller looks at,
// as the API server sends them; everything else passes through untouched, and nothing here is
// stricter than the API server (so a real Service always parses).
import { z } from 'zod';
import { ClaimKey } from './address-claim.js';
import { parseLoadBalancerIps, type Parsed } from './annotations.js';
import { ObjectMeta } from './meta.js';
import { LOAD_BALANCER_IPS_ANNOTATION, SHARING_KEY_ANNOTATION } from './names.js';
import type { Family } from './net.js';
import { Protocol } from './pod.js';

export const ServicePort = z.looseObject({
  name: z.string().optional(),
  protocol: Protocol.optional(),
  port: z.int().min(1).max(65535),
});
export type ServicePort = z.infer<typeof ServicePort>;

export const LoadBalancerIngress = z.looseObject({
  ip: z.string().optional(),
  hostname: z.string().optional(),
  ipMode: z.string().optional(),
});
export type LoadBalancerIngress = z.infer<typeof LoadBalancerIngress>;

export const Service = z.looseObject({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: ObjectMeta.extend({ namespace: z.string().min(1) }),
  spec: z
    .looseObject({
      type: z.string().optional(),
      loadBalancerClass: z.string().optional(),
      loadBalancerIP: z.string().optional(),
      ipFamilies: z.array(z.enum(['IPv4', 'IPv6'])).optional(),
      ipFamilyPolicy: z.string().optional(),
      ports: z.array(ServicePort).optional(),
      externalIPs: z.array(z.string()).optional(),
    })
    .optional(),
  status: z
    .looseObject({
      loadBalancer: z.looseObject({ ingress: z.array(LoadBalancerIngress).optional() }).optional(),
    })
    .optional(),
});
export type Service = z.infer<typeof Service>;

/**
 * The owner key of a Service's address claims: the sharing-key annotation, else
 * `Service/<name>` (no sharing); an annotation that is not a valid key is an error.
 */
export function serviceSharingKey(svc: Service): Parsed<string> {
  const raw = svc.metadata.annotations?.[SHARING_KEY_ANNOTATION]?.trim();
  if (!raw) return { ok: true, value: `Service/${svc.metadata.name}` };
  const r = ClaimKey.safeParse(raw);
  return r.success
    ? { ok: true, value: r.data }
    : { ok: false, error: `sharing-key: ${JSON.stringify(raw)} is not a valid key` };
}

/**
 * The addresses a Service asks for: the load-balancer-ips annotation, else the deprecated
 * spec.loadBalancerIP; undefined when it asks for none.
 */
export function requestedServiceAddresses(
  svc: Service,
): Parsed<{ ip: string; family: Family }[]> | undefined {
  return (
    parseLoadBalancerIps(svc.metadata.annotations?.[LOAD_BALANCER_IPS_ANNOTATION]) ??
    parseLoadBalancerIps(svc.spec?.loadBalancerIP)
  );
}
