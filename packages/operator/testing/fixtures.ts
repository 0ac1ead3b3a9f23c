// Objects for unit tests: Pools (parsed, defaults filled), slim Nodes, and NodeConfigs as the
// API server would store an apply.
import { API_VERSION, NodeConfig, Pool, POOL_KIND, type PoolSpec } from '@flock/api';
import { nodeConfig } from '@flock/api/testing';
import type { z } from 'zod';
import type { Condition } from '@flock/api';
import type { NodeConfigApply } from '../src/desired.js';
import type { PlanInput } from '../src/plan.js';
import type { Node } from '../src/nodes.js';

export const T0 = Date.parse('2030-01-01T00:00:00Z');
export const HOUR = 3_600_000;
export const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

export type PoolSpecInput = z.input<typeof Pool>['spec'];

export const baseSpec = (): PoolSpecInput => ({
  nodeSelector: { matchLabels: { pool: 'a' } },
  ipv6: { cidr: '2001:db8:100::/60', nodePrefixLength: 64 },
  bgp: {
    asn: 64512,
    peers: [
      { address: '2001:db8:ffff::1', asn: 65000 },
      { address: '2001:db8:ffff::2', asn: 65000, nodeSelector: { matchLabels: { rack: 'r1' } } },
    ],
  },
});

export function makePool(
  name: string,
  spec: PoolSpecInput = baseSpec(),
  o: { created?: number; generation?: number; uid?: string; status?: unknown } = {},
): Pool {
  return Pool.parse({
    apiVersion: API_VERSION,
    kind: POOL_KIND,
    metadata: {
      name,
      uid: o.uid ?? `uid-pool-${name}`,
      generation: o.generation ?? 1,
      resourceVersion: '1',
      creationTimestamp: iso(o.created ?? T0),
    },
    spec,
    ...(o.status ? { status: o.status } : {}),
  });
}

export function makeNode(
  name: string,
  labels: Record<string, string>,
  o: { created?: number; uid?: string } = {},
): Node {
  return {
    metadata: {
      name,
      uid: o.uid ?? `uid-node-${name}`,
      labels,
      creationTimestamp: new Date(o.created ?? T0).toISOString(),
    },
  };
}

/** A NodeConfig as stored after `apply` (spec defaults filled, metadata kept). */
export function stored(
  apply: NodeConfigApply,
  o: { rv?: number; uid?: string; deleting?: boolean; finalizers?: string[] } = {},
): NodeConfig {
  return NodeConfig.parse({
    ...apply,
    metadata: {
      ...apply.metadata,
      uid: o.uid ?? `uid-nc-${apply.metadata.name}`,
      resourceVersion: String(o.rv ?? 1),
      generation: 1,
      finalizers: o.finalizers ?? apply.metadata.finalizers,
      ...(o.deleting ? { deletionTimestamp: iso(T0) } : {}),
    },
  });
}

/** A NodeConfig written by hand (or by an older operator): only what a user would set. */
export function handWritten(
  name: string,
  spec: { pool: string; cidr6: string; cidr4?: string },
  o: { deleting?: boolean; finalizers?: string[] } = {},
): NodeConfig {
  return NodeConfig.parse(
    nodeConfig({
      name,
      metadata: {
        uid: `uid-nc-${name}`,
        resourceVersion: '1',
        finalizers: o.finalizers,
        deletionTimestamp: o.deleting ? iso(T0) : undefined,
      },
      spec,
    }),
  );
}

/** Plan input around one pool, an hour after T0, with a day's quarantine. */
export const planInput = (o: Partial<PlanInput> & Pick<PlanInput, 'pool'>): PlanInput => ({
  pools: [o.pool],
  nodes: [],
  nodeConfigs: [],
  now: T0 + HOUR,
  quarantineMs: 24 * HOUR,
  ...o,
});

export const condition = (conditions: Condition[] | undefined, type: string) =>
  conditions?.find((c) => c.type === type);

/** n0..n(n-1) with the given labels, one millisecond apart. */
export const someNodes = (n: number, labels: Record<string, string> = { pool: 'a' }) =>
  Array.from({ length: n }, (_, i) => makeNode(`n${i}`, labels, { created: T0 + i }));

export type { PoolSpec };
