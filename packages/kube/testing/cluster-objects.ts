// Objects and probes of the kube package's cluster tier (kube.cluster.test.ts): a ConfigMap, a
// pod bound to a node, a namespace's default ServiceAccount, and whether etcd has compacted.
import type { ListWatchSource } from '../src/informer/listwatch-source.js';
import { PODS, resourcePath } from '../src/core/resource.js';
import type { KubeTransport } from '../src/transport/transport.js';

/** Does a watch from resourceVersion 1 end with 410 Expired (i.e. has etcd compacted it)? */
export function expired(source: ListWatchSource): Promise<true | undefined> {
  return new Promise((resolve) => {
    const abort = source.watch(
      { resourceVersion: '1' },
      (e) => {
        abort();
        resolve(e.type === 'ERROR' && e.object.code === 410 ? true : undefined);
      },
      () => resolve(undefined),
    );
    setTimeout(() => {
      abort();
      resolve(undefined);
    }, 1000);
  });
}

export const configMap = (name: string, namespace: string, v: string) => ({
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: { name, namespace },
  data: { v },
});

/** The namespace's default ServiceAccount (no controller manager here makes it). */
export async function createServiceAccount(api: KubeTransport, ns: string): Promise<void> {
  await api.request({
    method: 'POST',
    path: resourcePath(
      { ...PODS, plural: 'serviceaccounts', kind: 'ServiceAccount' },
      { namespace: ns },
    ),
    body: { metadata: { name: 'default' } },
  });
}

/** A pod bound to a node (no kubelet runs it). */
export const nodePod = (namespace: string, name: string, nodeName: string) => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace },
  spec: {
    nodeName,
    automountServiceAccountToken: false,
    containers: [{ name: 'c', image: 'registry.invalid/none' }],
  },
});
