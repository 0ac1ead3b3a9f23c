// The two writes of a claim that was read: both carry what was read as their precondition, so
// that whoever changed the claim meanwhile (an agent handing it over, the controller joining a
// Service) wins with a 409, and the writer reads again.
import { AddressClaimSpec, type AddressClaim } from '@flock/api';
import { ADDRESSCLAIMS, objectPath, type KubeObject, type KubeTransport } from '@flock/kube';

/** Delete the claim as it was read (its uid and resourceVersion). */
export function deleteClaim(transport: KubeTransport, claim: AddressClaim): Promise<unknown> {
  const { name, uid, resourceVersion } = claim.metadata;
  return transport.request({
    method: 'DELETE',
    path: objectPath(ADDRESSCLAIMS, name),
    body: {
      apiVersion: 'v1',
      kind: 'DeleteOptions',
      preconditions: {
        ...(uid ? { uid } : {}),
        ...(resourceVersion ? { resourceVersion } : {}),
      },
    },
  });
}

const KNOWN = new Set(Object.keys(AddressClaimSpec.shape));

/**
 * Write the claim back as it was read (`raw`, with its resourceVersion) with a new spec; spec
 * fields this version does not know (a newer CRD's, written by a newer agent) are kept.
 */
export function replaceClaim(
  transport: KubeTransport,
  raw: KubeObject,
  spec: AddressClaimSpec,
): Promise<unknown> {
  const read = (raw as { spec?: Record<string, unknown> }).spec ?? {};
  const unknown = Object.fromEntries(Object.entries(read).filter(([k]) => !KNOWN.has(k)));
  return transport.request({
    method: 'PUT',
    path: objectPath(ADDRESSCLAIMS, raw.metadata.name as string),
    body: { ...raw, spec: { ...unknown, ...spec } },
  });
}
