// The BGP router ID of this node, first match wins:
//   1. --router-id (an operator override for the whole DaemonSet, e.g. from the downward API);
//   2. NodeConfig spec.bgp.routerID;
//   3. the first IPv4 InternalIP of the Node object;
//   4. a stable fallback derived from the node name: 240.0.0.0/4 plus the first 28 bits of
//      SHA-256(node name). 240.0.0.0/4 is reserved (RFC 1112) and never an interface address,
//      so the fallback cannot collide with an ID derived from a real router's address; two
//      fallbacks collide with odds of about n²/2²⁹ — the agent logs a warning that says to
//      set spec.bgp.routerID. 255.255.255.255 is never used.
import { createHash } from 'node:crypto';
import { ipFamily, type Logger } from '@flock/api';
import { canonicalAddress } from '@flock/ipam';
import {
  NODES,
  isNotFound,
  objectPath,
  type Cache,
  type KubeObject,
  type KubeTransport,
} from '@flock/kube';
import { z } from 'zod';

type RouterIdSource = 'flag' | 'nodeconfig' | 'node-internal-ip' | 'fallback';

export interface RouterIdChoice {
  routerId: string;
  source: RouterIdSource;
}

export interface NodeAddress {
  type: string;
  address: string;
}

const FALLBACK_BASE = 0xf0000000; // 240.0.0.0

/** 240.0.0.0/4 + 28 bits of SHA-256(nodeName), never 255.255.255.255. */
export function fallbackRouterId(nodeName: string): string {
  const digest = createHash('sha256').update(nodeName).digest();
  const bits = digest.readUInt32BE(0) >>> 4;
  const value = FALLBACK_BASE + Math.min(bits, 0x0ffffffe);
  return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join('.');
}

const ipv4 = (ip: string | undefined) =>
  ip !== undefined && ipFamily(ip) === 4 ? canonicalAddress(ip) : undefined;

export function chooseRouterId(input: {
  override?: string | undefined;
  specRouterId?: string | undefined;
  nodeAddresses: readonly NodeAddress[];
  nodeName: string;
}): RouterIdChoice {
  const flag = ipv4(input.override);
  if (flag) return { routerId: flag, source: 'flag' };
  const spec = ipv4(input.specRouterId);
  if (spec) return { routerId: spec, source: 'nodeconfig' };
  for (const a of input.nodeAddresses) {
    const ip = a.type === 'InternalIP' ? ipv4(a.address) : undefined;
    if (ip) return { routerId: ip, source: 'node-internal-ip' };
  }
  return { routerId: fallbackRouterId(input.nodeName), source: 'fallback' };
}

const NodeAddresses = z.object({
  status: z
    .object({
      addresses: z.array(z.object({ type: z.string(), address: z.string() })).optional(),
    })
    .optional(),
});

/** What the router ID reads of a Node. */
export type NodeObject = KubeObject & { status?: { addresses?: NodeAddress[] } };

/** This node's Node as the agent's watch of that one object keeps it. */
export type NodeView = Pick<Cache<NodeObject>, 'hasSynced' | 'getObject' | 'addHandler'>;

/** The Node's addresses from its watch (none when the Node is missing); undefined before it synced. */
export function cachedNodeAddresses(
  view: NodeView | undefined,
  nodeName: string,
): NodeAddress[] | undefined {
  if (!view?.hasSynced) return undefined;
  return view.getObject(nodeName)?.status?.addresses ?? [];
}

/** The Node object's addresses (empty when the Node is missing); throws on other API errors. */
export async function readNodeAddresses(
  transport: KubeTransport,
  nodeName: string,
): Promise<NodeAddress[]> {
  try {
    const node = NodeAddresses.parse(
      await transport.request({ method: 'GET', path: objectPath(NODES, nodeName) }),
    );
    return node.status?.addresses ?? [];
  } catch (error) {
    if (isNotFound(error)) return [];
    throw error;
  }
}

/** Log a change of router ID; the fallback loudly, since it is a guess. */
export function logRouterId(logger: Logger, nodeName: string, choice: RouterIdChoice): void {
  if (choice.source === 'fallback') {
    logger.warn(
      'NO ROUTER ID: spec.bgp.routerID is not set and the Node has no IPv4 InternalIP; using a fallback derived from the node name (240.0.0.0/4). Set spec.bgp.routerID (or --router-id) to a unique IPv4 address',
      { node: nodeName, routerId: choice.routerId },
    );
  } else {
    logger.info('BGP router ID', {
      node: nodeName,
      routerId: choice.routerId,
      source: choice.source,
    });
  }
}
