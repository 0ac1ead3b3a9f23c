// The fake API server over HTTP, through the real transport: what a cache needs (paged lists,
// watches) and errors as a real server answers them.
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../src/core/logger.js';
import { KubeApiError } from '../src/core/errors.js';
import { CONFIGMAPS, objectPath } from '../src/core/resource.js';
import { Cache } from '../src/informer/cache.js';
import { resourceListWatch } from '../src/informer/listwatch-source.js';
import { HttpTransport } from '../src/transport/http-transport.js';
import { FakeApiServer } from './fake-apiserver.js';
import { serveOverHttp, type HttpFront } from './fake-http.js';
import { eventually } from '@flock/testkit';

const cm = (name: string) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace: 'ns' },
});
let front: HttpFront | undefined;
afterEach(async () => {
  await front?.close();
  front = undefined;
});

describe('serveOverHttp', () => {
  it('a cache lists in pages and then watches through HttpTransport', async () => {
    const api = new FakeApiServer();
    for (let i = 0; i < 7; i++) api.putObject(CONFIGMAPS, cm(`c${i}`));
    front = await serveOverHttp(api);
    const cache = new Cache({
      source: resourceListWatch(new HttpTransport({ server: front.url }), CONFIGMAPS),
      logger: silentLogger,
      pageSize: 3,
    });
    cache.start();
    try {
      await cache.synced;
      expect(cache.size).toBe(7);
      expect(api.requests.filter((r) => r.method === 'GET').length).toBe(3); // pages of 3
      api.putObject(CONFIGMAPS, cm('late'));
      await eventually('watched', () => cache.getObject('late', 'ns') !== undefined);
    } finally {
      await cache.stop();
    }
  });

  it('an API error comes back with its code and reason', async () => {
    front = await serveOverHttp(new FakeApiServer());
    const error = await new HttpTransport({ server: front.url })
      .request({ method: 'GET', path: objectPath(CONFIGMAPS, 'nope', 'ns') })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(KubeApiError);
    expect(error).toMatchObject({ code: 404, reason: 'NotFound' });
  });
});
