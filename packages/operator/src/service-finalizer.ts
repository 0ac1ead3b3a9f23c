// The load balancer's finalizer on the Services flock serves (the one Kubernetes' own service
// controller uses, so kubectl and the e2e suites know it): a LoadBalancer Service of flock's
// class carries it from before its first address is claimed, and keeps it until the controller
// has let its addresses go. A Service deleted while the operator is down then waits for it,
// instead of leaving claims that only the claim GC's sweep would find.
import { OPERATOR_FIELD_MANAGER, type Service } from '@flock/api';
import { mergePatch, SERVICES, type KubeTransport } from '@flock/kube';

export const LB_CLEANUP_FINALIZER = 'service.kubernetes.io/load-balancer-cleanup';

const hasCleanupFinalizer = (svc: Service | undefined) =>
  svc?.metadata.finalizers?.includes(LB_CLEANUP_FINALIZER) ?? false;

/**
 * Add or remove the finalizer. The whole list is written at the resourceVersion read: a list
 * another writer changed in between is a conflict (409) the reconcile retries, never a
 * finalizer of someone else's lost.
 */
export async function setCleanupFinalizer(
  transport: KubeTransport,
  svc: Service,
  present: boolean,
  signal: AbortSignal,
): Promise<void> {
  if (hasCleanupFinalizer(svc) === present) return;
  const current = svc.metadata.finalizers ?? [];
  const finalizers = present
    ? [...current, LB_CLEANUP_FINALIZER]
    : current.filter((f) => f !== LB_CLEANUP_FINALIZER);
  if (signal.aborted) throw new Error('stopped: leadership lost or shutting down');
  await mergePatch(
    transport,
    SERVICES,
    svc.metadata.name,
    svc.metadata.namespace,
    {
      metadata: {
        ...(svc.metadata.resourceVersion ? { resourceVersion: svc.metadata.resourceVersion } : {}),
        finalizers: finalizers.length ? finalizers : null,
      },
    },
    { fieldManager: OPERATOR_FIELD_MANAGER, signal },
  );
}
