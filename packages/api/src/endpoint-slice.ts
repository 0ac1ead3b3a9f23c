// An EndpointSlice as flock reads it (discovery.k8s.io/v1): which Service it belongs to and,
// per endpoint, its node and conditions. Nothing stricter than the API server.
import { z } from 'zod';
import { ObjectMeta } from './meta.js';

/** The label an EndpointSlice names its Service by. */
export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';

export const Endpoint = z.looseObject({
  addresses: z.array(z.string()).optional(),
  nodeName: z.string().optional(),
  conditions: z
    .looseObject({
      ready: z.boolean().optional(),
      serving: z.boolean().optional(),
      terminating: z.boolean().optional(),
    })
    .optional(),
});
export type Endpoint = z.infer<typeof Endpoint>;

export const EndpointSlice = z.looseObject({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: ObjectMeta.extend({ namespace: z.string().min(1) }),
  endpoints: z.array(Endpoint).nullish(),
});
export type EndpointSlice = z.infer<typeof EndpointSlice>;

/**
 * Is the endpoint serving new connections here? `ready` (the API server sets it false for a
 * terminating endpoint, also when it still serves in-flight ones); absent counts as ready, as
 * kube-proxy counts it.
 */
export const endpointReady = (e: Endpoint): boolean =>
  e.conditions?.ready !== false && e.conditions?.terminating !== true;
