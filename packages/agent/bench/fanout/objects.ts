// The fan-out benchmark's cluster, as the API server is given it: Nodes as a kubelet registers
// them (status with addresses, capacity, conditions, images), pods bound to them, namespaces,
// NetworkPolicies and the operator's NodeConfigs. Pods, namespaces, policies and NodeConfigs
// are the memory benchmark's (policy/cluster-objects.ts), placed on this run's nodes and
// namespaces, without what the server sets itself (uid, managedFields, ...).
import { namespace, networkPolicy, nodeConfig, nodeName, pod } from '../policy/cluster-objects.js';

export { namespaceName, nodeName } from '../policy/cluster-objects.js';

const STAMP = '2026-12-01T08:00:00Z';
const hex = (n: number, width = 1) => n.toString(16).padStart(width, '0');

interface Obj {
  metadata: Record<string, unknown>;
  status?: unknown;
}

/** The object as a client sends it: without what the API server sets. */
function forCreate<T extends Obj>(o: T): Omit<T, 'status'> {
  const {
    uid: _u,
    creationTimestamp: _c,
    managedFields: _m,
    generation: _g,
    ...metadata
  } = o.metadata;
  const { status: _s, ...rest } = o;
  return { ...rest, metadata };
}

/** Node n's addresses: the pods' ranges are its NodeConfig's (cluster-objects nodeConfig). */
const nodeIp6 = (n: number) => `2001:db8:ffff::${hex(n)}`;
const nodeIp4 = (n: number) => `172.16.${n >> 8}.${n & 255}`;

/** Node n as its kubelet registers it (status included: a Node's create keeps it). */
export function node(n: number) {
  const name = nodeName(n);
  const condition = (type: string, status: string, reason: string, message: string) => ({
    type,
    status,
    reason,
    message,
    lastHeartbeatTime: STAMP,
    lastTransitionTime: STAMP,
  });
  const image = (i: number) => ({
    names: [
      `registry.example.com/shop/app-${i}@sha256:${hex(i * 7919, 64)}`,
      `registry.example.com/shop/app-${i}:1.4.2`,
    ],
    sizeBytes: 40_000_000 + i * 1_234_567,
  });
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name,
      labels: {
        'kubernetes.io/hostname': name,
        'kubernetes.io/os': 'linux',
        'kubernetes.io/arch': 'amd64',
        'beta.kubernetes.io/os': 'linux',
        'beta.kubernetes.io/arch': 'amd64',
        'node.kubernetes.io/instance-type': 'metal-64c',
        'topology.kubernetes.io/region': 'eu-1',
        'topology.kubernetes.io/zone': `eu-1${'abc'[n % 3] ?? 'a'}`,
        rack: `r${n % 40}`,
      },
      annotations: {
        'node.alpha.kubernetes.io/ttl': '0',
        'volumes.kubernetes.io/controller-managed-attach-detach': 'true',
      },
    },
    spec: {},
    status: {
      capacity: { cpu: '64', memory: '263842860Ki', pods: '110', 'ephemeral-storage': '960Gi' },
      allocatable: { cpu: '63', memory: '261745708Ki', pods: '110', 'ephemeral-storage': '900Gi' },
      conditions: [
        // As the agent keeps it (node-condition.ts): it then has nothing to write.
        condition(
          'NetworkUnavailable',
          'False',
          'FlockReady',
          'flock agent is running on this node',
        ),
        condition(
          'MemoryPressure',
          'False',
          'KubeletHasSufficientMemory',
          'kubelet has sufficient memory available',
        ),
        condition(
          'DiskPressure',
          'False',
          'KubeletHasNoDiskPressure',
          'kubelet has no disk pressure',
        ),
        condition(
          'PIDPressure',
          'False',
          'KubeletHasSufficientPID',
          'kubelet has sufficient PID available',
        ),
        condition('Ready', 'True', 'KubeletReady', 'kubelet is posting ready status'),
      ],
      addresses: [
        { type: 'InternalIP', address: nodeIp6(n) },
        { type: 'InternalIP', address: nodeIp4(n) },
        { type: 'Hostname', address: name },
      ],
      daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      nodeInfo: {
        machineID: hex(n, 32),
        systemUUID: `${hex(n, 8)}-0000-4000-8000-000000000000`,
        bootID: `${hex(n * 31, 8)}-0000-4000-8000-000000000001`,
        kernelVersion: '6.12.0-amd64',
        osImage: 'Debian GNU/Linux 13 (trixie)',
        containerRuntimeVersion: 'containerd://2.1.4',
        kubeletVersion: 'v1.36.3',
        kubeProxyVersion: '',
        operatingSystem: 'linux',
        architecture: 'amd64',
      },
      images: Array.from({ length: 12 }, (_, i) => image((n + i) % 50)),
    },
  };
}

export interface PodPlace {
  /** Pod number in the cluster. */
  index: number;
  node: number;
  /** The pod's number on its node (its addresses). */
  slot: number;
  namespace: string;
}

/** A pod as its Deployment's controller creates it: bound to its node, no status. */
export function podForCreate(place: PodPlace) {
  const p = pod(place.index);
  const created = forCreate(p);
  return {
    ...created,
    metadata: { ...created.metadata, namespace: place.namespace },
    spec: { ...p.spec, nodeName: nodeName(place.node) },
  };
}

/** What the kubelet reports of a running pod: the memory bench's status, this node's addresses. */
export function podStatus(place: PodPlace) {
  const { status } = pod(place.index);
  const n = place.node;
  const ip6 = `2001:db8:${hex(n, 4)}::${hex(place.slot + 1)}`;
  const ip4 = `10.${n >> 8}.${n & 255}.${(place.slot + 1) & 255}`;
  return {
    ...status,
    hostIP: nodeIp6(n),
    hostIPs: [{ ip: nodeIp6(n) }, { ip: nodeIp4(n) }],
    podIP: ip6,
    podIPs: [{ ip: ip6 }, { ip: ip4 }],
  };
}

export const namespaceForCreate = (n: number) => forCreate(namespace(n));
export const networkPolicyForCreate = (n: number, k: number) => forCreate(networkPolicy(n, k));
export const nodeConfigForCreate = (n: number) => forCreate(nodeConfig(n));
