// The owner key of a pod's floating addresses within its namespace: who may take a pinned
// address over (a replacement of the same workload) and which pods share an anycast address.
// The pod's flock.fritzlab.net/claim-key annotation, else its controller (a ReplicaSet made by
// a Deployment counts as the Deployment, so a rollout keeps the key), else the pod itself.
import { CLAIM_KEY_ANNOTATION, ClaimKey, CniErrorCode, type Pod } from '@flock/api';
import { z } from 'zod';
import { CniCommandError } from '../core/cni-error.js';

const OwnerReference = z.looseObject({
  kind: z.string().min(1),
  name: z.string().min(1),
  controller: z.boolean().optional(),
});

/** The claim key of a pod; a malformed claim-key annotation is refused (CNI error 101). */
export function podClaimKey(pod: Pod): string {
  const who = `pod ${pod.metadata.namespace}/${pod.metadata.name}`;
  const annotated = pod.metadata.annotations?.[CLAIM_KEY_ANNOTATION];
  if (annotated !== undefined) {
    const parsed = ClaimKey.safeParse(annotated);
    if (!parsed.success)
      throw new CniCommandError(
        CniErrorCode.NotAllowed,
        `${who}: annotation ${CLAIM_KEY_ANNOTATION}: ${parsed.error.issues[0]?.message ?? 'invalid'}`,
      );
    return parsed.data;
  }
  const controller = (pod.metadata.ownerReferences ?? [])
    .map((r) => OwnerReference.safeParse(r))
    .flatMap((r) => (r.success && r.data.controller ? [r.data] : []))[0];
  if (!controller) return `Pod/${pod.metadata.name}`;
  const hash = pod.metadata.labels?.['pod-template-hash'];
  if (controller.kind === 'ReplicaSet' && hash && controller.name.endsWith(`-${hash}`))
    return `Deployment/${controller.name.slice(0, -hash.length - 1)}`;
  return `${controller.kind}/${controller.name}`;
}
