import { describe, expect, it } from 'vitest';
import { Pod, isPodReady } from './pod.js';

/** A pod as the API server sends it (trimmed), with fields flock does not read. */
const served = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name: 'web-0',
    namespace: 'shop',
    uid: '6f1c0d3e-0000-4000-8000-000000000001',
    resourceVersion: '4711',
    creationTimestamp: '2026-11-29T10:00:00Z',
    deletionTimestamp: '2026-11-29T11:00:00Z',
    deletionGracePeriodSeconds: 30,
    labels: { app: 'web' },
    annotations: { 'flock.fritzlab.net/ip-algo': 'stable' },
    ownerReferences: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web', uid: 'x' }],
    managedFields: [{ manager: 'kubelet' }],
  },
  spec: {
    nodeName: 'node-a',
    containers: [
      {
        name: 'web',
        image: 'agnhost',
        ports: [{ name: 'http', containerPort: 80, protocol: 'TCP' }],
      },
    ],
    restartPolicy: 'Always',
  },
  status: {
    phase: 'Running',
    podIP: '2001:db8::7',
    podIPs: [{ ip: '2001:db8::7' }, { ip: '192.0.2.7' }],
    conditions: [
      { type: 'PodScheduled', status: 'True', lastTransitionTime: '2026-11-29T10:00:00Z' },
      { type: 'Ready', status: 'True', lastTransitionTime: '2026-11-29T10:00:05Z' },
    ],
    startTime: '2026-11-29T10:00:00Z',
  },
};

describe('Pod', () => {
  it('reads what the API server sends, timestamps as text, and keeps the rest', () => {
    const pod = Pod.parse(served);
    expect(pod.metadata.deletionTimestamp).toBe('2026-11-29T11:00:00Z');
    expect(pod.status?.podIPs?.map((p) => p.ip)).toEqual(['2001:db8::7', '192.0.2.7']);
    expect(pod.spec?.containers?.[0]?.ports?.[0]).toEqual({
      name: 'http',
      containerPort: 80,
      protocol: 'TCP',
    });
    expect(pod).toEqual(served);
    expect(isPodReady(pod)).toBe(true);
  });

  it('needs only a name and a namespace', () => {
    const bare = Pod.parse({ metadata: { name: 'p', namespace: 'default' } });
    expect(isPodReady(bare)).toBe(false);
    expect(Pod.safeParse({ metadata: { name: 'p' } }).success).toBe(false);
  });

  it('refuses what the API server refuses too: ports outside 1..65535, other protocols, non-IPs', () => {
    const withPort = (port: object) => ({
      ...served,
      spec: { containers: [{ name: 'web', ports: [{ containerPort: 80, ...port }] }] },
    });
    expect(Pod.safeParse(withPort({ containerPort: 0 })).success).toBe(false);
    expect(Pod.safeParse(withPort({ containerPort: 65536 })).success).toBe(false);
    expect(Pod.safeParse(withPort({ protocol: 'ICMP' })).success).toBe(false);
    expect(Pod.safeParse(withPort({ protocol: 'SCTP' })).success).toBe(true);
    const withIps = (status: object) => ({ ...served, status });
    expect(Pod.safeParse(withIps({ podIP: 'not-an-ip' })).success).toBe(false);
    expect(
      Pod.safeParse(withIps({ podIPs: [{ ip: '2001:db8::7' }, { ip: '10.0.0' }] })).success,
    ).toBe(false);
  });
});
