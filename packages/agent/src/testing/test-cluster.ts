// Test infrastructure (not shipped): a real API server prepared the way the agent's cluster
// tests need it — flock's CRDs served, the default ServiceAccount (there is no
// controller-manager to make it), and this node's Node object.
import { allCrds } from '@flock/api';
import {
  CUSTOM_RESOURCE_DEFINITIONS,
  HttpTransport,
  applyObject,
  type KubeObject,
  type ResourceRef,
} from '@flock/kube';
import { eventually, startControlPlane, type ControlPlane } from '@flock/testkit';

export interface TestCluster {
  cp: ControlPlane;
  api: HttpTransport;
  /** Server-side apply as a test (field manager flock-test). */
  apply(resource: ResourceRef, obj: object): Promise<unknown>;
}

export async function startTestCluster(nodeName: string): Promise<TestCluster> {
  const cp = await startControlPlane();
  const api = new HttpTransport(cp.kubeConfig);
  const apply = (resource: ResourceRef, obj: object) =>
    applyObject(api, resource, obj as KubeObject, { fieldManager: 'flock-test' });
  try {
    for (const [, crd] of allCrds()) await apply(CUSTOM_RESOURCE_DEFINITIONS, crd);
    await eventually('CRDs served', () =>
      api.request({ method: 'GET', path: '/apis/flock.fritzlab.net/v1alpha1/nodeconfigs' }),
    );
    await eventually('default namespace', () =>
      api.request({ method: 'GET', path: '/api/v1/namespaces/default' }),
    );
    await api.request({
      method: 'POST',
      path: '/api/v1/namespaces/default/serviceaccounts',
      body: { metadata: { name: 'default' } },
    });
    await api.request({
      method: 'POST',
      path: '/api/v1/nodes',
      body: { apiVersion: 'v1', kind: 'Node', metadata: { name: nodeName } },
    });
  } catch (error) {
    await cp.stop();
    throw error;
  }
  return { cp, api, apply };
}
