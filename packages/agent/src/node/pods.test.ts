import { CniErrorCode, silentLogger } from '@flock/api';
import { pod } from '@flock/api/testing';
import { PODS } from '@flock/kube';
import { FakeApiServer } from '@flock/kube/testing';
import { describe, expect, it } from 'vitest';
import { CniCommandError } from '../core/cni-error.js';
import {
  CachedPod,
  MAX_ANNOTATION_BYTES,
  OVERSIZE,
  PodLookupWithFallback,
  clusterPodCache,
  nodePods,
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
        resourceVersion: '7',
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
    // The pod as the API server serves it: what is kept, and more.
    const served = {
      metadata: {
        ...kept.metadata,
        annotations: {
          ...kept.metadata.annotations,
          'kubectl.kubernetes.io/last-applied-configuration': '{"a": "long"}',
        },
        managedFields: [{ manager: 'kubelet' }],
      },
      spec: {
        nodeName: 'node-a',
        containers: [{ name: 'c', image: 'x', ports: kept.spec.containers[0]!.ports }],
        restartPolicy: 'Always',
      },
      status: {
        ...kept.status,
        conditions: [
          { type: 'PodScheduled', status: 'True' },
          { type: 'Ready', status: 'True', lastTransitionTime: '2026-12-02T06:00:00Z' },
        ],
        startTime: '2026-12-02T06:00:00Z',
      },
    };
    expect(CachedPod.parse(served)).toEqual(kept);
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
});
