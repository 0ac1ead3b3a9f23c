// NodePeer: what ClusterNetworkPolicy `nodes` peers need of one Node (its labels and IP
// addresses), published by the operator for every agent. A Node changes whenever its kubelet
// reports status (conditions, images, every few minutes at least): every agent watching every
// Node whole would receive nodes × nodes of those. A NodePeer is rewritten only when the labels
// or addresses change. Cluster-scoped, named after its Node and owned by it (deleted with it);
// only the operator writes them, no tenant can forge a node peer.
import { z } from 'zod';
import { ipFamily } from './net.js';
import { ObjectMeta } from './meta.js';
import { API_VERSION, NODEPEER_KIND } from './names.js';

/** The most addresses a node peer keeps (a Node lists a few: InternalIP, ExternalIP per family). */
export const MAX_NODE_PEER_ADDRESSES = 16;

export const NodePeerSpec = z
  .object({
    labels: z
      .record(z.string().max(317), z.string().max(63))
      .optional()
      .describe("The Node's labels."),
    addresses: z
      .array(
        z
          .string()
          .max(45)
          .refine((s) => ipFamily(s) !== undefined, 'must be an IPv4 or IPv6 address'),
      )
      .max(MAX_NODE_PEER_ADDRESSES)
      .default([])
      .meta({ 'x-kubernetes-list-type': 'atomic' })
      .describe("The IP addresses of the Node's status.addresses, in their order, each once."),
  })
  .describe('One Node as ClusterNetworkPolicy `nodes` peers need it.');
export type NodePeerSpec = z.infer<typeof NodePeerSpec>;

export const NodePeerStatus = z.object({}).describe('Reserved: a node peer is all spec.');

export const NodePeer = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal(NODEPEER_KIND),
  metadata: ObjectMeta,
  spec: NodePeerSpec,
  status: NodePeerStatus.optional(),
});
export type NodePeer = z.infer<typeof NodePeer>;

/** The part of a Node a node peer is made of (any Node object parses). */
export interface NodePeerSource {
  metadata: { labels?: Record<string, string> | undefined };
  status?: { addresses?: { address: string }[] | null | undefined } | null | undefined;
}

/**
 * A Node's peer record: its labels, and its IP addresses (Hostname and DNS entries dropped,
 * repeats once, at most MAX_NODE_PEER_ADDRESSES). Equal records mean nothing to publish.
 */
export function nodePeerOf(node: NodePeerSource): NodePeerSpec {
  const addresses: string[] = [];
  for (const { address } of node.status?.addresses ?? []) {
    if (addresses.length === MAX_NODE_PEER_ADDRESSES) break;
    if (address.length <= 45 && ipFamily(address) && !addresses.includes(address))
      addresses.push(address);
  }
  const labels = node.metadata.labels;
  return { ...(labels && Object.keys(labels).length ? { labels } : {}), addresses };
}

/** Do two records say the same (labels in any order)? */
export function sameNodePeer(a: NodePeerSpec, b: NodePeerSpec): boolean {
  const la = a.labels ?? {};
  const lb = b.labels ?? {};
  const keys = Object.keys(la);
  return (
    keys.length === Object.keys(lb).length &&
    keys.every((k) => la[k] === lb[k]) &&
    a.addresses.length === b.addresses.length &&
    a.addresses.every((x, i) => x === b.addresses[i])
  );
}
