// Test infrastructure: a real API server prepared the way the agent's cluster
// tests need it — flock's CRDs served, the default ServiceAccount (there is no
// controller-manager to make it), and this node's Node object.
import { allCrds } from '@flock/api';
import {
  CUSTOM_RESOURCE_DEFINITIONS,
  HttpTransport,
  applyObject,
  type KubeObject,
  type KubeTransport,
  type ResourceRef,
} from '@flock/kube';
import { eventually, startControlPlane, type ControlPlane } from '@flock/testkit';

export interface TestCluster {
  cp: ControlPlane;
  api: HttpTransport;
  /** Server-side apply as a test (field manager flock-test). */
  apply: (resource: ResourceRef, obj: object) => Promise<unknown>;
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

export interface TestPodSpec {
  name: string;
  /** The node it is bound to (no scheduler in these clusters). */
  nodeName: string;
  annotations?: Record<string, string>;
  labels?: Record<string, string>;
}

/**
 * Create a Pod in `default`, bound to its node; resolves with its UID. Pod admission sees the
 * default ServiceAccount through an informer, so the first attempts may be refused: retried.
 */
export async function createTestPod(api: KubeTransport, pod: TestPodSpec): Promise<string> {
  const created = (await eventually(`pod ${pod.name} created`, () =>
    api.request({
      method: 'POST',
      path: '/api/v1/namespaces/default/pods',
      body: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name: pod.name,
          ...(pod.annotations ? { annotations: pod.annotations } : {}),
          ...(pod.labels ? { labels: pod.labels } : {}),
        },
        spec: { nodeName: pod.nodeName, containers: [{ name: 'c', image: 'example/x:1' }] },
      },
    }),
  )) as { metadata: { uid: string } };
  return created.metadata.uid;
}
