import {
  ANYCAST_ANNOTATION,
  BGP_COMMUNITIES_ANNOTATION,
  CLAIM_KEY_ANNOTATION,
  CniErrorCode,
  IPV4_ANNOTATION,
  IP_ALGO_ANNOTATION,
  PINNED_IP_ANNOTATION,
  silentLogger,
} from '@flock/api';
import { pod } from '@flock/api/testing';
import { PODS } from '@flock/kube';
import { FakeApiServer } from '@flock/kube/testing';
import { describe, expect, it } from 'vitest';
import { CniCommandError } from '../core/cni-error.js';
import {
  CachedPod,
  MAX_ANNOTATION_BYTES,
  MAX_POD_LABELS,
  OVERSIZE,
  OVER_LIMIT_LABEL,
  PodLookupWithFallback,
  clusterPodCache,
  nodePods,
  overLimit,
} from './pods.js';
import { parsePinnedIp } from '@flock/api';

describe('PodLookupWithFallback', () => {
  it('asks the API server for a pod the cache has not seen; a 404 is "no such pod"', async () => {
    const api = new FakeApiServer();
    const lookup = new PodLookupWithFallback(
      nodePods(clusterPodCache(api, silentLogger), 'node-a'),
      api,
    );
    api.putObject(PODS, pod({ name: 'web' }));
    expect((await lookup.get('default', 'web'))?.metadata?.name).toBe('web');
    expect(await lookup.get('default', 'nope')).toBeUndefined();
  });

  it('an API server that does not answer is "try again later" (code 11), naming the pod', async () => {
    const api = new FakeApiServer();
    const lookup = new PodLookupWithFallback(
      nodePods(clusterPodCache(api, silentLogger), 'node-a'),
      api,
    );
    api.inject(() => new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED') }));
    const error = await lookup.get('default', 'web').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CniCommandError);
    expect(error).toMatchObject({
      code: CniErrorCode.TryAgainLater,
      message: expect.stringMatching(/default\/web.*API server.*ECONNREFUSED/),
    });
  });
});

describe('the pod cache', () => {
  it("keeps what flock reads of a pod, and of annotations only flock's own", () => {
    const kept = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'web',
        namespace: 'shop',
        uid: 'u1',
        labels: { app: 'web' },
        annotations: { 'flock.fritzlab.net/ip-algo': 'stable' },
        deletionTimestamp: '2026-12-02T07:00:00Z',
      },
      spec: { nodeName: 'node-a', containers: [{ ports: [{ name: 'http', containerPort: 80 }] }] },
      status: {
        phase: 'Running',
        podIPs: [{ ip: '2001:db8::1' }],
        conditions: [{ type: 'Ready', status: 'True' }],
      },
    };
    // The pod as the API server serves it: what is kept, and more (podIP is podIPs[0]; a port
    // without a name is nothing a policy can name).
    const served = {
      metadata: {
        ...kept.metadata,
        resourceVersion: '7',
        ownerReferences: [
          { apiVersion: 'v1', kind: 'Node', name: 'n', uid: 'u', blockOwnerDeletion: true },
        ],
        annotations: {
          ...kept.metadata.annotations,
          'kubectl.kubernetes.io/last-applied-configuration': '{"a": "long"}',
        },
        managedFields: [{ manager: 'kubelet' }],
      },
      spec: {
        nodeName: 'node-a',
        containers: [
          { name: 'c', image: 'x', ports: kept.spec.containers[0]!.ports },
          { name: 'sidecar', ports: [{ containerPort: 15090 }] },
        ],
        restartPolicy: 'Always',
      },
      status: {
        ...kept.status,
        podIP: '2001:db8::1',
        conditions: [
          { type: 'PodScheduled', status: 'True' },
          { type: 'Ready', status: 'True', lastTransitionTime: '2026-12-02T06:00:00Z' },
        ],
        startTime: '2026-12-02T06:00:00Z',
      },
    };
    const cached = CachedPod.parse(served);
    // One object a pod: its JSON is the trimmed pod, and the nested fields read the same.
    expect(JSON.parse(JSON.stringify(cached))).toEqual(kept);
    expect(cached.metadata).toMatchObject(kept.metadata);
    expect(cached.spec).toMatchObject(kept.spec);
    expect(cached.status).toMatchObject(kept.status);
    expect([cached.apiVersion, cached.kind, cached.status?.podIP]).toEqual([
      'v1',
      'Pod',
      undefined,
    ]);
  });

  it('keeps only the annotations flock reads, and none of them whole past 4 KiB (fail-closed)', () => {
    const big = 'x'.repeat(190 * 1024); // what a hostile namespace puts on pods that never run
    const cached = CachedPod.parse({
      metadata: {
        name: 'p',
        namespace: 'evil',
        annotations: {
          'flock.fritzlab.net/pinned-ip': big,
          'flock.fritzlab.net/anycast': '2001:db8:300::53',
          'flock.fritzlab.net/anything-else': big,
          'example.com/notes': big,
        },
      },
      spec: { containers: [] },
    });
    expect(cached.metadata.annotations).toEqual({
      'flock.fritzlab.net/pinned-ip': OVERSIZE,
      'flock.fritzlab.net/anycast': '2001:db8:300::53',
    });
    expect(JSON.stringify(cached).length).toBeLessThan(MAX_ANNOTATION_BYTES);
    // The kept marker is no address: the pod is refused, never given one.
    expect(parsePinnedIp(OVERSIZE)?.ok).toBe(false);
  });

  it('keeps every annotation a CNI ADD reads (a dropped one is a request silently ignored)', () => {
    const read = {
      [IP_ALGO_ANNOTATION]: 'stable',
      [PINNED_IP_ANNOTATION]: '2001:db8:200::7',
      [ANYCAST_ANNOTATION]: '2001:db8:300::53',
      [BGP_COMMUNITIES_ANNOTATION]: '65000:1',
      [CLAIM_KEY_ANNOTATION]: 'Deployment/web',
      [IPV4_ANNOTATION]: 'public',
    };
    const cached = CachedPod.parse({
      metadata: { name: 'p', namespace: 'shop', annotations: read },
      spec: { containers: [] },
    });
    expect(cached.metadata.annotations).toEqual(read);
  });

  it('a pod over 64 labels or 64 named ports is kept without them, marked over-limit (fail-closed)', () => {
    const labels = Object.fromEntries(
      Array.from({ length: MAX_POD_LABELS + 1 }, (_, i) => [`example.com/l${i}`, 'x'.repeat(63)]),
    );
    const many = CachedPod.parse({
      metadata: { name: 'p', namespace: 'evil', labels: { ...labels, 'pod-template-hash': 'h1' } },
      spec: { containers: [{ ports: [{ name: 'http', containerPort: 80 }] }] },
    });
    expect(overLimit(many)).toBe('66 labels (flock keeps at most 64)');
    // What its claim key reads stays; nothing a selector could match does.
    expect(many.metadata.labels).toEqual({
      [OVER_LIMIT_LABEL]: '66 labels (flock keeps at most 64)',
      'pod-template-hash': 'h1',
    });
    expect(many.spec?.containers).toEqual([]);
    expect(JSON.stringify(many).length).toBeLessThan(1024);
    const ports = Array.from({ length: 65 }, (_, i) => ({
      name: `p${i}`,
      containerPort: 1000 + i,
    }));
    const named = CachedPod.parse({
      metadata: { name: 'q', namespace: 'evil', labels: { app: 'q' } },
      spec: { containers: [{ ports }] },
    });
    expect(overLimit(named)).toBe('65 named ports (flock keeps at most 64)');
    expect(named.metadata.labels).toEqual({ [OVER_LIMIT_LABEL]: overLimit(named) });
    const fine = CachedPod.parse({
      metadata: { name: 'r', namespace: 'ok', labels: { app: 'r' } },
      spec: { containers: [{ ports: ports.slice(0, 64) }] },
    });
    expect(overLimit(fine)).toBeUndefined();
  });

  it('replicas share one frozen copy of their labels and named ports; each keeps its own root', () => {
    const replica = (name: string, ip: string) =>
      CachedPod.parse(
        pod({
          name,
          labels: { app: 'web', 'pod-template-hash': 'abc' },
          podIPs: [ip],
          ports: [{ name: 'http', port: 80 }],
        }),
      );
    const [a, b] = [replica('web-1', '2001:db8::1'), replica('web-2', '2001:db8::2')];
    expect(a.metadata.labels).toBe(b.metadata.labels);
    expect(a.spec?.containers).toBe(b.spec?.containers);
    expect(Object.isFrozen(a.metadata.labels)).toBe(true);
    expect(Object.isExtensible(a)).toBe(true); // netpol keeps its per-pod memo on it
    expect(a.status?.podIPs).toEqual([{ ip: '2001:db8::1' }]);
  });

  it("serves a lookup from this node's pods only: a namesake on another node is asked for", async () => {
    const api = new FakeApiServer();
    api.putObject(PODS, pod({ name: 'web', nodeName: 'node-b' }));
    const cache = clusterPodCache(api, silentLogger);
    cache.start();
    try {
      await cache.synced;
      const view = nodePods(cache, 'node-a');
      expect(cache.getObject('web', 'default')).toBeDefined();
      expect(view.getObject('web', 'default')).toBeUndefined();
      const lookup = new PodLookupWithFallback(view, api);
      const before = api.requests.length;
      expect((await lookup.get('default', 'web'))?.spec?.nodeName).toBe('node-b');
      expect(
        api.requests
          .slice(before)
          .filter((r) => r.method === 'GET')
          .map((r) => r.path),
      ).toEqual(['/api/v1/namespaces/default/pods/web']);
    } finally {
      await cache.stop();
    }
  });

  it("indexes only the agent's own node when told: its view is whole, other nodes' pods are in no index", async () => {
    const api = new FakeApiServer();
    api.putObject(PODS, pod({ name: 'a1', nodeName: 'node-a' }));
    api.putObject(PODS, pod({ name: 'b1', nodeName: 'node-b' }));
    const cache = clusterPodCache(api, silentLogger, undefined, undefined, 'node-a');
    cache.start();
    try {
      await cache.synced;
      const view = nodePods(cache, 'node-a');
      expect(view.list().map((p) => p.metadata.name)).toEqual(['a1']);
      expect(cache.indexValues('node')).toEqual(['node-a']);
      expect(cache.getObject('b1', 'default')).toBeDefined(); // still a peer
      // A pod that moves in (rescheduled namesake) joins the view; one that leaves goes.
      api.putObject(PODS, pod({ name: 'b1', uid: 'uid-b1-again', nodeName: 'node-a' }));
      api.deleteObject(PODS, 'a1', 'default');
      await expect.poll(() => view.list().map((p) => p.metadata.name)).toEqual(['b1']);
    } finally {
      await cache.stop();
    }
  });
});
