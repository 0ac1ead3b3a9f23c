// What an ADD asks for, read from the CNI request and the Pod object: who the pod is, which
// interface-ID algorithm, which pinned and anycast addresses, which BGP communities. Bad
// annotations are the user's input: they become CNI errors that say what is wrong, never
// exceptions.
import {
  ANYCAST_ANNOTATION,
  BGP_COMMUNITIES_ANNOTATION,
  CniErrorCode,
  IPV4_ANNOTATION,
  PINNED_IP_ANNOTATION,
  communitiesOutside,
  parseAnycast,
  parseCommunities,
  parseIpv4Request,
  parsePinnedIp,
  parsePortMappings,
  reservedHostPortRefusal,
  type Communities,
  type HostPort,
  type IpAlgo,
  type Ipv4Request,
  type NodeConfigSpec,
  type Logger,
  type PinnedAddresses,
  type Pod,
  type ReservedHostPorts,
} from '@flock/api';
import { canonicalAddress, cidrsContainIp, resolveIpAlgo } from '@flock/ipam';
import { CniCommandError } from '../core/cni-error.js';
import { mayAskIpv4, type NamespaceRef } from '../claims/grants.js';

interface PodIdentity {
  namespace: string;
  name: string;
  /** K8S_POD_UID from the runtime, when it passes one. */
  uid?: string;
}

/** K8S_POD_NAMESPACE / K8S_POD_NAME (/ K8S_POD_UID) from CNI_ARGS. */
export function podIdentity(args: Record<string, string>): PodIdentity {
  const namespace = args['K8S_POD_NAMESPACE'];
  const name = args['K8S_POD_NAME'];
  if (!namespace || !name) {
    throw new CniCommandError(
      CniErrorCode.InvalidEnvironment,
      'CNI_ARGS must name the pod: K8S_POD_NAMESPACE and K8S_POD_NAME are required',
    );
  }
  const uid = args['K8S_POD_UID'];
  return uid ? { namespace, name, uid } : { namespace, name };
}

export interface AddressRequest {
  algo: IpAlgo;
  pinned?: PinnedAddresses;
  anycast: string[];
}

/** Resolve ip-algo, the pinned address and the anycast addresses of a pod on this node. */
export function addressRequest(
  pod: Pod,
  node: { annotations?: Record<string, string>; anycastCIDRs?: string[] },
  logger: Logger,
): AddressRequest {
  const annotations = pod.metadata?.annotations ?? {};
  const who = `pod ${pod.metadata?.namespace}/${pod.metadata?.name}`;
  const algo = resolveIpAlgo(annotations, node.annotations, logger);
  const pinned = parsePinnedIp(annotations[PINNED_IP_ANNOTATION]);
  if (pinned && !pinned.ok) {
    throw new CniCommandError(
      CniErrorCode.NotAllowed,
      `${who}: annotation ${PINNED_IP_ANNOTATION}: ${pinned.error}`,
    );
  }
  const anycast = parseAnycast(annotations[ANYCAST_ANNOTATION]);
  if (anycast && !anycast.ok) {
    throw new CniCommandError(
      CniErrorCode.NotAllowed,
      `${who}: annotation ${ANYCAST_ANNOTATION}: ${anycast.error}`,
    );
  }
  // parseAnycast accepted each one as an address, so canonicalAddress is defined.
  const anycastIps = (anycast?.value ?? []).map((ip) => canonicalAddress(ip) as string);
  const ranges = node.anycastCIDRs ?? [];
  const outside = anycastIps.filter((ip) => !cidrsContainIp(ranges, ip));
  if (outside.length) {
    throw new CniCommandError(
      CniErrorCode.NotAllowed,
      `${who}: anycast ${outside.join(', ')} outside this node's anycast ranges (${ranges.join(', ') || 'none'})`,
    );
  }
  return { algo, ...(pinned?.value ? { pinned: pinned.value } : {}), anycast: anycastIps };
}

/** The pod's ipv4 annotation (public, none), or why it is refused. */
export function ipv4Annotation(pod: Pod): Ipv4Request | undefined {
  const parsed = parseIpv4Request(pod.metadata?.annotations?.[IPV4_ANNOTATION]);
  if (parsed && !parsed.ok) {
    const who = `pod ${pod.metadata?.namespace}/${pod.metadata?.name}`;
    throw new CniCommandError(
      CniErrorCode.NotAllowed,
      `${who}: annotation ${IPV4_ANNOTATION}: ${parsed.error}`,
    );
  }
  return parsed?.value;
}

/**
 * Does the pod get an IPv4 address from the node's slice? Under assign: Always every pod
 * does, unless it asks for none; under OnRequest only a pod that asks, from a namespace the
 * grants name. A pod that asks where it cannot get one is refused: it needs IPv4, and starting
 * it without would fail later and less clearly.
 */
export function ipv4Wanted(
  pod: Pod,
  asked: Ipv4Request | undefined,
  spec: NodeConfigSpec,
  namespace: NamespaceRef,
): boolean {
  if (asked === 'none') return false;
  const who = `pod ${pod.metadata?.namespace}/${pod.metadata?.name}`;
  if (spec.cidr4 === undefined) {
    if (asked === undefined) return false;
    throw new CniCommandError(
      CniErrorCode.NotAllowed,
      `${who} asks for public IPv4 (annotation ${IPV4_ANNOTATION}), but this node's Pool has no ipv4 range`,
    );
  }
  if (asked === 'public' && spec.ipv4?.mode === 'Private')
    throw new CniCommandError(
      CniErrorCode.NotAllowed,
      `${who} asks for public IPv4 (annotation ${IPV4_ANNOTATION}), but this node's Pool gives private IPv4 only (ipv4.mode: Private)`,
    );
  if ((spec.ipv4?.assign ?? 'Always') === 'Always') return true;
  if (asked === undefined) return false;
  if (mayAskIpv4(spec, namespace)) return true;
  throw new CniCommandError(
    CniErrorCode.NotAllowed,
    `${who} asks for public IPv4, but no grant of this node's Pool names namespace ${namespace.name} (ipv4.grants)`,
  );
}

/**
 * The pod's own BGP communities (bgp-communities annotation), canonical; every one must be
 * allowed to its namespace (the communities of the grants that cover it), else the ADD is
 * refused.
 */
export function communityRequest(pod: Pod, allowed: Communities | undefined): string[] {
  const who = `pod ${pod.metadata?.namespace}/${pod.metadata?.name}`;
  const parsed = parseCommunities(pod.metadata?.annotations?.[BGP_COMMUNITIES_ANNOTATION]);
  if (!parsed) return [];
  if (!parsed.ok) {
    throw new CniCommandError(
      CniErrorCode.NotAllowed,
      `${who}: annotation ${BGP_COMMUNITIES_ANNOTATION}: ${parsed.error}`,
    );
  }
  const refused = communitiesOutside(parsed.value, allowed);
  if (refused.length) {
    const list = [...(allowed?.standard ?? []), ...(allowed?.large ?? [])].join(', ') || 'none';
    throw new CniCommandError(
      CniErrorCode.NotAllowed,
      `${who}: BGP communities ${refused.join(', ')} are not allowed to this namespace on this node (the communities of the Pool's grants that cover it: ${list})`,
    );
  }
  return parsed.value;
}

/**
 * The pod's hostPorts (runtimeConfig.portMappings): a bad one is a refusal naming it, and so is
 * one of the node's reserved ports (any hostIP: the node's daemons listen on every address).
 */
export function hostPortRequest(
  config: unknown,
  reserved: readonly ReservedHostPorts[],
): HostPort[] {
  const parsed = parsePortMappings(config, (ip) => canonicalAddress(ip) ?? ip);
  if (!parsed.ok) throw new CniCommandError(CniErrorCode.InvalidNetworkConfig, parsed.error);
  for (const m of parsed.value) {
    const refusal = reservedHostPortRefusal(m, reserved);
    if (refusal) throw new CniCommandError(CniErrorCode.NotAllowed, refusal);
  }
  return parsed.value;
}
