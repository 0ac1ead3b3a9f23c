// A Pod as flock reads it: the fields the agent and the policy code look at, as the API server
// sends them (timestamps are RFC 3339 text, never Date objects). Everything else passes
// through untouched, and nothing here is stricter than the API server (it, too, refuses ports
// outside 1..65535, other protocols and addresses that are not IPs), so a real pod always
// parses — and what NetworkPolicy translation writes into nft from it is well-formed.
import { z } from 'zod';
import { ObjectMeta } from './meta.js';
import { IpAddress } from './net.js';

export const Protocol = z.enum(['TCP', 'UDP', 'SCTP']);
export type Protocol = z.infer<typeof Protocol>;

const ContainerPort = z.looseObject({
  name: z.string().optional(),
  containerPort: z.int().min(1).max(65535),
  protocol: Protocol.optional(),
});

export const Pod = z.looseObject({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: ObjectMeta.extend({
    namespace: z.string().min(1),
    /** Set once the pod is being deleted (graceful shutdown, or a node that never confirms). */
    deletionTimestamp: z.string().optional(),
  }),
  spec: z
    .looseObject({
      nodeName: z.string().optional(),
      hostNetwork: z.boolean().optional(),
      containers: z
        .array(
          z.looseObject({ name: z.string().optional(), ports: z.array(ContainerPort).optional() }),
        )
        .optional(),
    })
    .optional(),
  status: z
    .looseObject({
      phase: z.string().optional(),
      podIP: IpAddress.optional(),
      podIPs: z.array(z.looseObject({ ip: IpAddress })).optional(),
      conditions: z.array(z.looseObject({ type: z.string(), status: z.string() })).optional(),
    })
    .optional(),
});
export type Pod = z.infer<typeof Pod>;

/** Is the pod Ready (its Ready condition True)? */
export function isPodReady(pod: Pod): boolean {
  return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}
