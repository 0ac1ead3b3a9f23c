// The lab's control plane and, when flock runs as processes (not the chart), what flock puts on
// it from the host: its CRDs, the operator and the CNI plugin bundle.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { allCrds } from '@flock/api';
import { run } from '@flock/exec';
import { CUSTOM_RESOURCE_DEFINITIONS, type applyObject, type HttpTransport } from '@flock/kube';
import { eventually, startControlPlane, type ControlPlane, type Netns } from '@flock/testkit';
import { cnpCrd } from '../../shared/cnp-crd.js';
import { startDaemon, type Daemon } from '../../shared/daemon.js';
import type { NodeCgroup } from '../node/cgroup.js';
import {
  APISERVER_PORT,
  CP_ADDR4,
  CP_ADDR6,
  inFamilyOrder,
  KUBERNETES_SERVICE_IPS,
  SERVICE_CIDRS,
  type PrimaryFamily,
} from './plan.js';

const require = createRequire(import.meta.url);
const OPERATOR_MAIN = join(
  dirname(require.resolve('@flock/operator/package.json')),
  'dist',
  'src',
  'main.js',
);
const CNI_ROOT = dirname(require.resolve('@flock/cni/package.json'));

/**
 * etcd, the API server, the controller manager and the scheduler in `cpNs`; `fast`: short
 * node-monitor and toleration settings (a dead node's pods move in seconds, not minutes).
 */
export function startLabControlPlane(
  cpNs: Netns,
  primaryFamily: PrimaryFamily,
  fast: boolean,
): Promise<ControlPlane> {
  return startControlPlane({
    components: ['etcd', 'apiserver', 'controller-manager', 'scheduler'],
    netns: cpNs.path,
    apiserverPort: APISERVER_PORT,
    sans: [CP_ADDR6, CP_ADDR4, ...KUBERNETES_SERVICE_IPS],
    extraArgs: {
      apiserver: [
        '--bind-address=::',
        // The `kubernetes` Service's endpoint: of its first family.
        `--advertise-address=${primaryFamily === 'IPv6' ? CP_ADDR6 : CP_ADDR4}`,
        `--service-cluster-ip-range=${inFamilyOrder(SERVICE_CIDRS, primaryFamily).join(',')}`,
        '--kubelet-preferred-address-types=InternalIP',
        ...(fast
          ? [
              '--default-not-ready-toleration-seconds=10',
              '--default-unreachable-toleration-seconds=10',
            ]
          : []),
      ],
      'controller-manager': fast
        ? ['--node-monitor-grace-period=10s', '--node-monitor-period=2s']
        : [],
    },
  });
}

/** flock's Pools and (the chart's default) ClusterNetworkPolicies are served. */
export async function crdsServed(api: HttpTransport): Promise<unknown> {
  await api.request({ method: 'GET', path: '/apis/flock.fritzlab.net/v1alpha1/pools' });
  return api.request({
    method: 'GET',
    path: '/apis/policy.networking.k8s.io/v1alpha2/clusternetworkpolicies',
  });
}

export interface FlockOnHost {
  dir: string;
  api: HttpTransport;
  cp: ControlPlane;
  /** The control plane's cgroup: the operator runs there too. */
  cpCgroup: NodeCgroup;
  apply: (resource: Parameters<typeof applyObject>[1], obj: object) => Promise<unknown>;
  step: (line: string) => void;
}

/** CRDs, the operator process and the CNI plugin bundle (install: processes); the operator. */
export async function startFlockOnHost(o: FlockOnHost): Promise<Daemon> {
  o.step('CRDs and the flock-system namespace');
  for (const [, crd] of allCrds()) await o.apply(CUSTOM_RESOURCE_DEFINITIONS, crd);
  // As the chart's defaults install it (clusterNetworkPolicy.crds).
  await o.apply(CUSTOM_RESOURCE_DEFINITIONS, cnpCrd('experimental'));
  await eventually('CRDs served', () => crdsServed(o.api));
  await o.api
    .request({
      method: 'POST',
      path: '/api/v1/namespaces',
      body: { metadata: { name: 'flock-system' } },
    })
    .catch((e: unknown) => {
      if ((e as { code?: number }).code !== 409) throw e;
    });
  o.step('operator');
  const operator = startDaemon(
    process.execPath,
    [
      OPERATOR_MAIN,
      ...['--kubeconfig', o.cp.kubeconfigPath, '--namespace', 'flock-system'],
      ...['--health-port', '0'],
      ...['--lease-duration', '4s', '--renew-deadline', '3s', '--retry-period', '1s'],
    ],
    join(o.dir, 'operator.log'),
  );
  await o.cpCgroup.adopt(operator.child.pid!);
  o.step('CNI plugin bundle');
  await run(
    process.execPath,
    [join(CNI_ROOT, 'scripts', 'bundle.mjs'), '--outdir', join(o.dir, 'cni-bundle')],
    { timeoutMs: 120_000 },
  );
  return operator;
}
