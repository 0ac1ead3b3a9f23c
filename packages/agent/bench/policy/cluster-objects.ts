// A large cluster's objects as an API server serves them (managedFields, last-applied
// configuration, probes, container statuses): what the agent's caches receive, for the memory
// benchmark (cache-memory.ts). Deterministic: object i is the same in every run.
import {
  API_VERSION,
  MAX_SLICE_PEERS,
  PEERSLICE_KIND,
  Pod,
  peerOfPod,
  type PeerPod,
} from '@flock/api';
import * as builders from '@flock/api/testing';

/** Namespaces, pods per app (a Deployment's replicas), nodes. */
export const SHAPE = { namespaces: 1_000, replicas: 10, nodes: 1_000 };

const hex = (n: number, width: number) => n.toString(16).padStart(width, '0');
const uid = (kind: number, i: number) =>
  `${hex(kind, 8)}-${hex(i >> 16, 4)}-4${hex(i & 0xfff, 3)}-8000-${hex(i, 12)}`;
const STAMP = '2026-12-01T08:00:00Z';

export const namespaceName = (n: number) => `team-${hex(n, 3)}`;
export const nodeName = (n: number) => `node-${hex(n, 3)}`;

export function namespace(n: number) {
  const name = namespaceName(n);
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: {
      name,
      uid: uid(1, n),
      labels: { 'kubernetes.io/metadata.name': name, team: `t${n % 40}`, env: 'prod' },
      managedFields: [managed('kubectl', { 'f:metadata': { 'f:labels': { 'f:team': {} } } })],
    },
    spec: { finalizers: ['kubernetes'] },
    status: { phase: 'Active' },
  };
}

function managed(manager: string, fieldsV1: object, subresource?: string) {
  return {
    manager,
    operation: 'Update',
    apiVersion: 'v1',
    time: STAMP,
    fieldsType: 'FieldsV1',
    fieldsV1,
    ...(subresource ? { subresource } : {}),
  };
}

/** Pod i: namespace i % namespaces, a replica of app (i / namespaces) / replicas there. */
export function pod(i: number) {
  const ns = namespaceName(i % SHAPE.namespaces);
  const appIndex = Math.floor(i / SHAPE.namespaces / SHAPE.replicas);
  const app = `app-${appIndex}`;
  const hash = hex(0x5d000000 + appIndex * 7919, 8);
  const rs = `${app}-${hash}`;
  // Inside its node's ranges (nodeConfig): the k-th pod of node n.
  const n = i % SHAPE.nodes;
  const k = Math.floor(i / SHAPE.nodes) + 1;
  const ip6 = `2001:db8:${hex(n, 4)}::${hex(k, 1)}`;
  const ip4 = `10.${n >> 8}.${n & 255}.${k & 255}`;
  const container = {
    name: 'main',
    image: `registry.example.com/shop/${app}:1.4.2`,
    ports: [
      { name: 'http', containerPort: 8080, protocol: 'TCP' },
      { name: 'metrics', containerPort: 9090, protocol: 'TCP' },
    ],
    env: [
      { name: 'LOG_LEVEL', value: 'info' },
      {
        name: 'POD_NAME',
        valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } },
      },
      { name: 'DB_URL', value: `postgres://db.${ns}.svc:5432/${app}` },
    ],
    resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { memory: '256Mi' } },
    readinessProbe: { httpGet: { path: '/ready', port: 'http', scheme: 'HTTP' }, periodSeconds: 5 },
    livenessProbe: { httpGet: { path: '/live', port: 'http', scheme: 'HTTP' }, periodSeconds: 10 },
    volumeMounts: [
      { name: 'kube-api-access', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' },
    ],
    terminationMessagePath: '/dev/termination-log',
    terminationMessagePolicy: 'File',
    imagePullPolicy: 'IfNotPresent',
  };
  const condition = (type: string) => ({ type, status: 'True', lastTransitionTime: STAMP });
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: `${rs}-${hex(i, 5)}`,
      generateName: `${rs}-`,
      namespace: ns,
      uid: uid(2, i),
      creationTimestamp: STAMP,
      labels: {
        app,
        'app.kubernetes.io/name': app,
        'app.kubernetes.io/instance': `${app}-prod`,
        'app.kubernetes.io/part-of': 'shop',
        tier: i % 3 === 0 ? 'frontend' : 'backend',
        'pod-template-hash': hash,
      },
      annotations: {
        'kubectl.kubernetes.io/restartedAt': STAMP,
        'prometheus.io/scrape': 'true',
        'prometheus.io/port': '9090',
      },
      ownerReferences: [
        {
          apiVersion: 'apps/v1',
          kind: 'ReplicaSet',
          name: rs,
          uid: uid(3, appIndex),
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
      managedFields: [
        managed('kube-controller-manager', {
          'f:metadata': { 'f:labels': { 'f:app': {}, 'f:tier': {} }, 'f:ownerReferences': {} },
          'f:spec': { 'f:containers': { 'k:{"name":"main"}': { 'f:image': {}, 'f:env': {} } } },
        }),
        managed(
          'kubelet',
          { 'f:status': { 'f:conditions': {}, 'f:podIPs': {}, 'f:containerStatuses': {} } },
          'status',
        ),
      ],
    },
    spec: {
      containers: [container],
      volumes: [{ name: 'kube-api-access', projected: { defaultMode: 420, sources: [] } }],
      restartPolicy: 'Always',
      terminationGracePeriodSeconds: 30,
      dnsPolicy: 'ClusterFirst',
      serviceAccountName: 'default',
      nodeName: nodeName(i % SHAPE.nodes),
      securityContext: {},
      schedulerName: 'default-scheduler',
      tolerations: [
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute' },
        { key: 'node.kubernetes.io/unreachable', operator: 'Exists', effect: 'NoExecute' },
      ],
      priority: 0,
      enableServiceLinks: true,
      preemptionPolicy: 'PreemptLowerPriority',
    },
    status: {
      phase: 'Running',
      conditions: ['PodReadyToStartContainers', 'Initialized', 'Ready', 'ContainersReady'].map(
        condition,
      ),
      hostIP: `2001:db8:ffff::${hex(i % SHAPE.nodes, 3)}`,
      podIP: ip6,
      podIPs: [{ ip: ip6 }, { ip: ip4 }],
      startTime: STAMP,
      containerStatuses: [
        {
          name: 'main',
          state: { running: { startedAt: STAMP } },
          ready: true,
          restartCount: 0,
          image: container.image,
          imageID: `registry.example.com/shop/${app}@sha256:${hex(appIndex, 64)}`,
          containerID: `containerd://${hex(i, 64)}`,
          started: true,
        },
      ],
      qosClass: 'Burstable',
    },
  };
}

/** Node n's NodeConfig: the ranges its pods' addresses are in (the agent checks peers' podIPs). */
export function nodeConfig(n: number) {
  return builders.nodeConfig({
    name: nodeName(n),
    spec: { cidr6: `2001:db8:${hex(n, 4)}::/64`, cidr4: `10.${n >> 8}.${n & 255}.0/24` },
  });
}

/** NetworkPolicy k of namespace n (ten kinds, as a namespace's set of policies has). */
export function networkPolicy(n: number, k: number) {
  const ns = namespaceName(n);
  const app = `app-${k}`;
  const specs: Record<string, unknown>[] = [
    { podSelector: {}, policyTypes: ['Ingress'] },
    {
      podSelector: { matchLabels: { app } },
      ingress: [
        {
          from: [{ podSelector: { matchLabels: { tier: 'frontend' } } }],
          ports: [{ port: 'http' }],
        },
      ],
    },
    {
      podSelector: { matchLabels: { app } },
      ingress: [
        {
          from: [{ namespaceSelector: { matchLabels: { team: `t${(n + 1) % 40}` } } }],
          ports: [{ protocol: 'TCP', port: 8080 }],
        },
      ],
    },
    {
      podSelector: {},
      policyTypes: ['Egress'],
      egress: [
        {
          to: [{ namespaceSelector: {}, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }],
          ports: [
            { protocol: 'UDP', port: 53 },
            { protocol: 'TCP', port: 53 },
          ],
        },
      ],
    },
    {
      podSelector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['backend'] }] },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [
        { from: [{ ipBlock: { cidr: '2001:db8:ff00::/40', except: ['2001:db8:ff00::/48'] } }] },
      ],
      egress: [{ to: [{ ipBlock: { cidr: '0.0.0.0/0', except: ['169.254.0.0/16'] } }] }],
    },
  ];
  const spec = specs[k % specs.length] as Record<string, unknown>;
  const name = `np-${k}-${app}`;
  const applied = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name, namespace: ns },
    spec,
  };
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: {
      name,
      namespace: ns,
      uid: uid(4, n * 100 + k),
      generation: 1,
      creationTimestamp: STAMP,
      annotations: {
        'kubectl.kubernetes.io/last-applied-configuration': `${JSON.stringify(applied)}\n`,
      },
      managedFields: [
        managed('kubectl-client-side-apply', {
          'f:metadata': {
            'f:annotations': { '.': {}, 'f:kubectl.kubernetes.io/last-applied-configuration': {} },
          },
          'f:spec': { 'f:podSelector': {}, 'f:policyTypes': {}, 'f:ingress': {}, 'f:egress': {} },
        }),
      ],
    },
    spec,
  };
}

/**
 * The PeerSlices the operator's publisher writes for pods 0..pods-1: each namespace's records,
 * up to MAX_SLICE_PEERS a slice.
 */
export function peerSlices(pods: number) {
  const byNamespace = new Map<string, PeerPod[]>();
  for (let i = 0; i < pods; i++) {
    const p = pod(i);
    const record = peerOfPod(Pod.parse(p));
    if (!record) continue;
    const list = byNamespace.get(p.metadata.namespace) ?? [];
    list.push(record);
    byNamespace.set(p.metadata.namespace, list);
  }
  const slices = [];
  for (const [ns, records] of byNamespace)
    for (let at = 0; at < records.length; at += MAX_SLICE_PEERS)
      slices.push({
        apiVersion: API_VERSION,
        kind: PEERSLICE_KIND,
        metadata: { name: `${ns}-${slices.length}` },
        spec: { namespace: ns, pods: records.slice(at, at + MAX_SLICE_PEERS) },
      });
  return slices;
}
