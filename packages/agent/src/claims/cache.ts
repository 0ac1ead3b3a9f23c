// Every AddressClaim of the cluster (a floating address each: few next to pods), for the
// decisions that read ownership on every pass — what this node announces, which source
// addresses its pods may use. Writes never trust it: they go through ClaimBook at the
// resourceVersion they read from the API server.
import { AddressClaim, claimName, ipFamily, type Logger } from '@flock/api';
import {
  ADDRESSCLAIMS,
  Cache,
  resourceListWatch,
  type KubeTransport,
  type MetricsOptions,
} from '@flock/kube';
import type { ClaimOf } from './ownership.js';

export function claimCache(
  transport: KubeTransport,
  logger: Logger,
  watchdogMs?: number,
  metrics?: MetricsOptions,
): Cache<AddressClaim> {
  return new Cache<AddressClaim>({
    source: resourceListWatch(transport, ADDRESSCLAIMS),
    schema: AddressClaim,
    name: 'addressclaims',
    logger,
    ...(metrics ? { metrics } : {}),
    ...(watchdogMs ? { watchdogMs } : {}),
  });
}

/** The claim of an address, as the cache holds it (undefined for a non-address). */
export function claimLookup(cache: Pick<Cache<AddressClaim>, 'getObject'>): ClaimOf {
  return (address) => (ipFamily(address) ? cache.getObject(claimName(address)) : undefined);
}
