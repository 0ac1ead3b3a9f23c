// resourceServed against a real kube-apiserver (the twin of served.test.ts on FakeApiServer):
// built-in resources, an optional CRD before and after it is installed and after it is removed,
// and the answer for a client that may not list the resource at all (discovery needs no RBAC).
import {
  CNP_CRD_NAME,
  eventually,
  installCnpCrd,
  kubectl,
  startControlPlane,
  type ControlPlane,
} from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { KubeApiError } from '../core/errors.js';
import { HttpTransport } from '../transport/http-transport.js';
import { CLUSTER_NETWORK_POLICIES, LEASES, PODS, resourcePath } from '../core/resource.js';
import { resourceServed } from './served.js';

let cp: ControlPlane;
let api: HttpTransport;

beforeAll(async () => {
  cp = await startControlPlane();
  api = new HttpTransport(cp.kubeConfig);
});
afterAll(async () => {
  await cp?.stop();
});

describe('resourceServed (real API server)', () => {
  it('built-in resources are served; a resource its group does not have is not', async () => {
    expect(await resourceServed(api, PODS)).toBe(true);
    expect(await resourceServed(api, LEASES)).toBe(true);
    expect(await resourceServed(api, { ...PODS, plural: 'widgets', kind: 'Widget' })).toBe(false);
  });

  it('an optional CRD: not served, installed, served — also to a client without RBAC — removed', async () => {
    expect(await resourceServed(api, CLUSTER_NETWORK_POLICIES)).toBe(false);
    await installCnpCrd(cp);
    await eventually('discovery lists clusternetworkpolicies', async () =>
      (await resourceServed(api, CLUSTER_NETWORK_POLICIES)) ? true : undefined,
    );
    // A user bound to no role: discovery answers it (system:discovery), a LIST is forbidden.
    const nobody = new HttpTransport((await cp.mintUser('flock-served-nobody')).kubeConfig);
    expect(await resourceServed(nobody, CLUSTER_NETWORK_POLICIES)).toBe(true);
    const list = await nobody
      .request({ method: 'GET', path: resourcePath(CLUSTER_NETWORK_POLICIES) })
      .catch((e: unknown) => e);
    expect(list).toBeInstanceOf(KubeApiError);
    expect((list as KubeApiError).code).toBe(403);

    await kubectl(cp.kubeconfigPath, ['delete', 'crd', CNP_CRD_NAME, '--wait=true']);
    await eventually('discovery no longer lists clusternetworkpolicies', async () =>
      (await resourceServed(api, CLUSTER_NETWORK_POLICIES)) ? undefined : true,
    );
  });
});
