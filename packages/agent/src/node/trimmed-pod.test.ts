import { describe, expect, it } from 'vitest';
import { CachedPod } from './pod-trim.js';
import { hasPodAddress, withPodIPs } from './trimmed-pod.js';

const served = {
  metadata: {
    name: 'dns',
    namespace: 'infra',
    uid: 'u9',
    labels: { app: 'dns' },
    annotations: { 'flock.fritzlab.net/anycast': '2001:db8:300::53' },
    deletionTimestamp: '2026-12-05T10:00:00Z',
  },
  spec: { nodeName: 'node-b', hostNetwork: true, containers: [] },
  status: {
    phase: 'Running',
    podIPs: [{ ip: '2001:db8:b::7' }, { ip: '198.51.100.7' }, { ip: '2001:db8:b::8' }],
  },
};

describe('a cached pod as one object', () => {
  it('reads as the nested pod it was made of, rare fields and a third address included', () => {
    const pod = CachedPod.parse(served);
    expect(pod.metadata.annotations).toEqual(served.metadata.annotations);
    expect(pod.metadata.deletionTimestamp).toBe('2026-12-05T10:00:00Z');
    expect(pod.spec?.hostNetwork).toBe(true);
    expect(pod.status?.podIPs).toEqual(served.status.podIPs);
    expect(JSON.parse(JSON.stringify(pod))).toEqual({
      apiVersion: 'v1',
      kind: 'Pod',
      ...served,
      spec: { nodeName: 'node-b', hostNetwork: true, containers: [] },
    });
  });

  it('keeps status.podIP only when there is no podIPs', () => {
    const old = CachedPod.parse({ ...served, status: { podIP: '2001:db8:b::9' } });
    expect([old.status?.podIP, old.status?.podIPs]).toEqual(['2001:db8:b::9', undefined]);
  });

  it('withPodIPs changes the addresses and nothing else', () => {
    const pod = CachedPod.parse(served);
    const fewer = withPodIPs(pod, ['198.51.100.7']);
    expect(fewer.status?.podIPs).toEqual([{ ip: '198.51.100.7' }]);
    const { status: _a, ...rest } = JSON.parse(JSON.stringify(fewer)) as typeof served;
    const { status: _b, ...before } = JSON.parse(JSON.stringify(pod)) as typeof served;
    expect(rest).toEqual(before);
    expect(pod.status?.podIPs).toHaveLength(3); // the cached one is left as it was
  });
});

describe('hasPodAddress', () => {
  it('says whether status has an address, for cached and plain pods alike', () => {
    const none = { ...served, status: { phase: 'Pending' } };
    const legacy = { ...served, status: { podIP: '2001:db8:b::9' } };
    for (const [pod, has] of [
      [served, true],
      [legacy, true],
      [none, false],
      [{ ...served, status: { podIPs: [] } }, false],
    ] as const) {
      expect(hasPodAddress(CachedPod.parse(pod))).toBe(has);
      expect(hasPodAddress(pod as unknown as Parameters<typeof hasPodAddress>[0])).toBe(has);
    }
  });
});
