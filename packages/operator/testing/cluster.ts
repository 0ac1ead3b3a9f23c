// The cluster tier's setup: a real control plane with flock's CRDs applied by the real
// kubectl, the operator's namespace, and small helpers to write Nodes and Pools and read
// NodeConfigs, Pools and Events back (all parsed with the same schemas the operator uses).
import { join } from 'node:path';
import {
  AddressClaim,
  API_VERSION,
  claimName,
  GROUP,
  NodeConfig,
  Pool,
  POOL_KIND,
} from '@flock/api';
import {
  ADDRESSCLAIMS,
  HttpTransport,
  mergePatch,
  NODECONFIGS,
  NODES,
  objectPath,
  POOLS,
  resourcePath,
  type KubeTransport,
} from '@flock/kube';
import {
  kubectl,
  repoRoot,
  startControlPlane,
  waitForCrds,
  type Component,
  type ControlPlane,
} from '@flock/testkit';
import type { PoolSpecInput } from './fixtures.js';

const CRDS = join(repoRoot(import.meta.dirname), 'crds');
export const NAMESPACE = 'flock-system';

export interface Cluster {
  cp: ControlPlane;
  api: HttpTransport;
  kubectl(...args: string[]): Promise<string>;
}

export async function startCluster(components?: Component[]): Promise<Cluster> {
  const cp = await startControlPlane(components ? { components } : {});
  try {
    const k = async (...args: string[]) => (await kubectl(cp.kubeconfigPath, args)).stdout;
    await k('apply', '--server-side', '-f', CRDS);
    await waitForCrds(cp.kubeconfigPath, [
      `pools.${GROUP}`,
      `nodeconfigs.${GROUP}`,
      `addressclaims.${GROUP}`,
    ]);
    await k('create', 'namespace', NAMESPACE);
    return { cp, api: new HttpTransport(cp.kubeConfig), kubectl: k };
  } catch (err) {
    await cp.stop();
    throw err;
  }
}

export async function createNode(api: KubeTransport, name: string, labels: Record<string, string>) {
  await api.request({
    method: 'POST',
    path: resourcePath(NODES),
    body: { apiVersion: 'v1', kind: 'Node', metadata: { name, labels } },
  });
}

/** Replace a node's labels (null removes one). */
export async function labelNode(
  api: KubeTransport,
  name: string,
  labels: Record<string, string | null>,
) {
  await mergePatch(api, NODES, name, undefined, { metadata: { labels } });
}

export async function deleteNode(api: KubeTransport, name: string) {
  await api.request({ method: 'DELETE', path: objectPath(NODES, name) });
}

/** Create or update a Pool the way a user does: `kubectl apply`. */
export async function applyPool(c: Cluster, name: string, spec: PoolSpecInput) {
  const body = JSON.stringify({
    apiVersion: API_VERSION,
    kind: POOL_KIND,
    metadata: { name },
    spec,
  });
  await kubectl(c.cp.kubeconfigPath, ['apply', '-f', '-'], { input: body });
}

export async function getPool(api: KubeTransport, name: string): Promise<Pool | undefined> {
  try {
    return Pool.parse(await api.request({ method: 'GET', path: objectPath(POOLS, name) }));
  } catch {
    return undefined;
  }
}

export async function listNodeConfigs(api: KubeTransport): Promise<NodeConfig[]> {
  const list = (await api.request({ method: 'GET', path: resourcePath(NODECONFIGS) })) as {
    items: unknown[];
  };
  return list.items.map((i) =>
    NodeConfig.parse({ apiVersion: API_VERSION, kind: 'NodeConfig', ...(i as object) }),
  );
}

/** node name → NodeConfig, of one pool. */
export async function configsOf(
  api: KubeTransport,
  pool: string,
): Promise<Map<string, NodeConfig>> {
  const all = await listNodeConfigs(api);
  return new Map(all.filter((nc) => nc.spec.pool === pool).map((nc) => [nc.metadata.name, nc]));
}

export interface EventView {
  reason: string;
  note: string;
  type: string;
  regarding: { kind: string; name: string };
}

export async function listEvents(api: KubeTransport): Promise<EventView[]> {
  const list = (await api.request({ method: 'GET', path: '/apis/events.k8s.io/v1/events' })) as {
    items: EventView[];
  };
  return list.items;
}

export const condition = (pool: Pool | undefined, type: string) =>
  pool?.status?.conditions?.find((c) => c.type === type);

/** The AddressClaim of an address, if there is one. */
export async function getClaim(
  api: KubeTransport,
  address: string,
): Promise<AddressClaim | undefined> {
  try {
    const raw = await api.request({
      method: 'GET',
      path: objectPath(ADDRESSCLAIMS, claimName(address)),
    });
    return AddressClaim.parse(raw);
  } catch {
    return undefined;
  }
}
