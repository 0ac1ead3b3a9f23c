import { describe, expect, it } from 'vitest';
import { NodeConfig } from '../src/nodeconfig.js';
import { isPodReady, Pod } from '../src/pod.js';
import { Pool } from '../src/pool.js';
import { nodeConfig, pod, pool } from './builders.js';

describe('test object builders', () => {
  it('build valid objects, and what the schemas read back is what they built', () => {
    for (const [schema, object] of [
      [NodeConfig, nodeConfig()],
      [Pool, pool()],
      [Pod, pod()],
    ] as const) {
      expect(schema.parse(object)).toEqual(object);
    }
  });

  it('nodeConfig: name, metadata, spec fields and ip-algo in place of the defaults; undefined drops one', () => {
    const nc = nodeConfig({
      name: 'node-b',
      metadata: { generation: 3 },
      spec: { cidr4: '192.0.2.16/28', bgp: { asn: 65001, peers: [] } },
    });
    expect(nc).toStrictEqual({
      apiVersion: 'flock.fritzlab.net/v1alpha1',
      kind: 'NodeConfig',
      metadata: { name: 'node-b', generation: 3 },
      spec: {
        pool: 'dc1',
        cidr6: '2001:db8:100::/64',
        cidr4: '192.0.2.16/28',
        bgp: { asn: 65001, peers: [] },
      },
    });
    expect(
      nodeConfig({ ipAlgo: 'sequential', metadata: { annotations: { a: 'b' } } }).metadata,
    ).toStrictEqual({
      name: 'node-a',
      annotations: { a: 'b', 'flock.fritzlab.net/ip-algo': 'sequential' },
    });
    expect(nodeConfig({ spec: { ...nc.spec, cidr4: undefined } }).spec).toStrictEqual(
      nodeConfig({ spec: { bgp: { asn: 65001, peers: [] } } }).spec,
    );
  });

  it('pool: a complete spec comes out as given', () => {
    const spec = {
      ipv6: { cidr: '2001:db8::/56', nodePrefixLength: 64 },
      ipv4: {
        cidr: '10.0.0.0/16',
        nodePrefixLength: 28,
        assign: 'Always' as const,
        mode: 'Public' as const,
      },
      bgp: { asn: 64513, peers: [] },
    };
    expect(pool({ name: 'p', spec })).toStrictEqual({
      apiVersion: 'flock.fritzlab.net/v1alpha1',
      kind: 'Pool',
      metadata: { name: 'p' },
      spec,
    });
  });

  it('pod: running and Ready on node-a by default; each option where the API server has it', () => {
    expect(isPodReady(pod())).toBe(true);
    expect(isPodReady(pod({ ready: false }))).toBe(false);
    const p = pod({
      name: 'db',
      namespace: 'shop',
      labels: { app: 'db' },
      annotations: { a: 'b' },
      nodeName: undefined,
      phase: 'Pending',
      podIPs: ['2001:db8::1'],
      ports: [{ name: 'sql', port: 5432, protocol: 'TCP' }],
      terminating: true,
    });
    expect(Pod.parse(p)).toStrictEqual(p);
    expect(p).toStrictEqual({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        namespace: 'shop',
        name: 'db',
        uid: 'uid-db',
        labels: { app: 'db' },
        annotations: { a: 'b' },
        deletionTimestamp: '2026-08-16T09:00:00Z',
      },
      spec: {
        containers: [
          { name: 'main', ports: [{ name: 'sql', containerPort: 5432, protocol: 'TCP' }] },
        ],
      },
      status: {
        phase: 'Pending',
        conditions: [{ type: 'Ready', status: 'True' }],
        podIPs: [{ ip: '2001:db8::1' }],
      },
    });
  });
});
