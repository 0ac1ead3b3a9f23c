// flock's own resources: the Pool, NodeConfig and AddressClaim references and the NodeConfig client, parsed
// by the schemas of @flock/api. They live here, not in @flock/api beside the schemas, because a
// client needs this package's transport and apply helpers, and @flock/kube already depends on
// @flock/api (api ← kube ← apps): the other way round would be a cycle.
import {
  ADDRESSCLAIM_KIND,
  ADDRESSCLAIM_PLURAL,
  GROUP,
  NODECONFIG_KIND,
  NODECONFIG_PLURAL,
  NodeConfig,
  NODEPEER_KIND,
  NODEPEER_PLURAL,
  PEERSLICE_KIND,
  PEERSLICE_PLURAL,
  POOL_KIND,
  POOL_PLURAL,
  VERSION,
  type NodeConfigStatus,
} from '@flock/api';
import type { z } from 'zod';
import { ResourceClient } from '../api/resource-client.js';
import type { Logger } from '../core/logger.js';
import type { ResourceRef } from '../core/resource.js';
import type { KubeTransport } from '../transport/transport.js';

export const POOLS: ResourceRef = {
  group: GROUP,
  version: VERSION,
  plural: POOL_PLURAL,
  kind: POOL_KIND,
  namespaced: false,
};
export const NODECONFIGS: ResourceRef = {
  group: GROUP,
  version: VERSION,
  plural: NODECONFIG_PLURAL,
  kind: NODECONFIG_KIND,
  namespaced: false,
};

export const ADDRESSCLAIMS: ResourceRef = {
  group: GROUP,
  version: VERSION,
  plural: ADDRESSCLAIM_PLURAL,
  kind: ADDRESSCLAIM_KIND,
  namespaced: false,
};

/** Pods of one namespace as policy peers, published by the operator (PeerSlice). */
export const PEERSLICES: ResourceRef = {
  group: GROUP,
  version: VERSION,
  plural: PEERSLICE_PLURAL,
  kind: PEERSLICE_KIND,
  namespaced: false,
};

/** One Node as ClusterNetworkPolicy `nodes` peers, published by the operator (NodePeer). */
export const NODEPEERS: ResourceRef = {
  group: GROUP,
  version: VERSION,
  plural: NODEPEER_PLURAL,
  kind: NODEPEER_KIND,
  namespaced: false,
};

export type NodeConfigClient = ResourceClient<
  NodeConfig,
  NodeConfigStatus,
  z.input<typeof NodeConfig>
>;

interface TypedClientOptions {
  fieldManager: string;
  logger: Logger;
}

export function createNodeConfigClient(
  transport: KubeTransport,
  options: TypedClientOptions,
): NodeConfigClient {
  return new ResourceClient({ transport, resource: NODECONFIGS, schema: NodeConfig, ...options });
}
