// The test control plane itself: RBAC is enforced, ServiceAccount tokens work, and the
// controller-manager runs the controllers flock's tests rely on.
import { AppsV1Api, CoreV1Api, KubeConfig, RbacAuthorizationV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from './controlplane.js';
import { eventually } from './eventually.js';
import { kubectl } from './kubectl.js';

describe('test control plane', () => {
  let cp: ControlPlane;
  beforeAll(async () => {
    cp = await startControlPlane({
      components: ['etcd', 'apiserver', 'controller-manager', 'scheduler'],
    });
  });
  afterAll(async () => cp?.stop());

  it('reports the pinned Kubernetes release', async () => {
    const v = JSON.parse((await kubectl(cp.kubeconfigPath, ['version', '-o', 'json'])).stdout);
    expect(v.serverVersion.gitVersion).toMatch(/^v1\.3\d+\.\d+$/);
  });

  it('enforces RBAC: 403 without a binding, allowed with a ClusterRole', async () => {
    const { path } = await cp.mintUser('alice', ['developers']);
    const alice = new KubeConfig();
    alice.loadFromFile(path);
    const asAlice = alice.makeApiClient(CoreV1Api);
    const denied = await asAlice.listNamespace().then(
      () => undefined,
      (e: { code?: number }) => e.code,
    );
    expect(denied).toBe(403);
    const rbac = cp.clientNodeConfig.makeApiClient(RbacAuthorizationV1Api);
    await rbac.createClusterRole({
      body: {
        metadata: { name: 'ns-reader' },
        rules: [{ apiGroups: [''], resources: ['namespaces'], verbs: ['list'] }],
      },
    });
    await rbac.createClusterRoleBinding({
      body: {
        metadata: { name: 'alice-ns-reader' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'ns-reader' },
        subjects: [{ kind: 'User', name: 'alice', apiGroup: 'rbac.authorization.k8s.io' }],
      },
    });
    const list = await eventually('alice may list namespaces', () => asAlice.listNamespace(), {
      timeoutMs: 60_000,
    });
    expect(list.items.map((n) => n.metadata?.name)).toContain('default');
  });

  it('issues ServiceAccount tokens the API server accepts', async () => {
    const sa = await eventually('default namespace exists', async () => {
      await cp.clientNodeConfig.makeApiClient(CoreV1Api).readNamespace({ name: 'default' });
      return cp.mintServiceAccount('default', 'robot');
    });
    const whoami = JSON.parse((await kubectl(sa.path, ['auth', 'whoami', '-o', 'json'])).stdout);
    expect(whoami.status.userInfo.username).toBe('system:serviceaccount:default:robot');
  });

  it('runs Deployments to Pods and garbage-collects dependents', async () => {
    const apps = cp.clientNodeConfig.makeApiClient(AppsV1Api);
    const core = cp.clientNodeConfig.makeApiClient(CoreV1Api);
    await eventually('default service account', () =>
      core.readNamespacedServiceAccount({ namespace: 'default', name: 'default' }),
    );
    await apps.createNamespacedDeployment({
      namespace: 'default',
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: 2,
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: { containers: [{ name: 'web', image: 'example/web:1' }] },
          },
        },
      },
    });
    const pods = await eventually('two pods', async () => {
      const list = await core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=web' });
      return list.items.length === 2 ? list.items : undefined;
    });
    expect(pods.every((p) => p.status?.phase === 'Pending')).toBe(true);
    await apps.deleteNamespacedDeployment({
      namespace: 'default',
      name: 'web',
      body: { propagationPolicy: 'Background' },
    });
    await eventually('replicasets and pods collected', async () => {
      const rs = await apps.listNamespacedReplicaSet({
        namespace: 'default',
        labelSelector: 'app=web',
      });
      const p = await core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=web' });
      return rs.items.length === 0 && p.items.length === 0 ? true : undefined;
    });
  });
});
