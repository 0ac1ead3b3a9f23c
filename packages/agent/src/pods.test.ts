import { CniErrorCode, silentLogger } from '@flock/api';
import { PODS } from '@flock/kube';
import { FakeApiServer } from '@flock/kube/testing';
import { describe, expect, it } from 'vitest';
import { CniCommandError } from './cni/errors.js';
import { PodLookupWithFallback, nodePodCache } from './pods.js';

const pod = (name: string) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace: 'default' },
  spec: { nodeName: 'node-a', containers: [] },
});

describe('PodLookupWithFallback', () => {
  it('asks the API server for a pod the cache has not seen; a 404 is "no such pod"', async () => {
    const api = new FakeApiServer();
    const lookup = new PodLookupWithFallback(nodePodCache(api, 'node-a', silentLogger), api);
    api.putObject(PODS, pod('web'));
    expect((await lookup.get('default', 'web'))?.metadata?.name).toBe('web');
    expect(await lookup.get('default', 'nope')).toBeUndefined();
  });

  it('an API server that does not answer is "try again later" (code 11), naming the pod', async () => {
    const api = new FakeApiServer();
    const lookup = new PodLookupWithFallback(nodePodCache(api, 'node-a', silentLogger), api);
    api.inject(() => new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED') }));
    const error = await lookup.get('default', 'web').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CniCommandError);
    expect(error).toMatchObject({
      code: CniErrorCode.TryAgainLater,
      message: expect.stringMatching(/default\/web.*API server.*ECONNREFUSED/),
    });
  });
});
