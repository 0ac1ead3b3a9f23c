// A synthetic cluster for benchmarks: N pods spread over 50 namespaces, 100 of them on this
// node (the kubelet's default max-pods is 110), and P policies of the kinds real clusters
// have: default-deny, same-namespace app rules with numeric and named ports, cross-namespace
// selector rules with port ranges, ipBlock egress with except, DNS egress, egress to named ports.
import type { StateInput } from '../src/state.js';

export interface SyntheticOptions {
  pods: number;
  policies: number;
  localPods?: number;
  namespaces?: number;
}

const TIERS = ['web', 'api', 'db'];

export function syntheticState(o: SyntheticOptions): StateInput {
  const nsCount = o.namespaces ?? 50;
  const localPods = o.localPods ?? 100;
  const nsName = (i: number) => `ns-${i % nsCount}`;
  const namespaces = Array.from({ length: nsCount }, (_, i) => ({
    metadata: { name: nsName(i), labels: { team: `t${i % 5}`, env: i % 2 ? 'prod' : 'dev' } },
  }));
  const pods = Array.from({ length: o.pods }, (_, i) => ({
    metadata: {
      name: `pod-${i}`,
      namespace: nsName(i),
      labels: { app: `app-${i % 7}`, tier: TIERS[i % 3] as string },
    },
    spec: {
      containers: [
        {
          name: 'main',
          ports: [
            { name: 'http', containerPort: 8080 + (i % 3), protocol: 'TCP' },
            { name: 'metrics', containerPort: 9090, protocol: 'TCP' },
            { name: 'dns', containerPort: 53, protocol: 'UDP' },
          ],
        },
      ],
    },
    status: {
      phase: 'Running',
      podIPs: [
        { ip: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}` },
        // Two groups: a group holds 16 bits (fd00::1:0 is pod 65,536).
        { ip: `fd00::${(i >>> 16).toString(16)}:${(i & 0xffff).toString(16)}` },
      ],
    },
  }));
  const step = Math.max(1, Math.floor(o.pods / localPods));
  const local = Array.from({ length: Math.min(localPods, o.pods) }, (_, k) => {
    const i = (k * step + k) % o.pods; // not aligned with the label and namespace cycles
    return {
      namespace: nsName(i),
      name: `pod-${i}`,
      interface: `flock${i.toString(16).padStart(8, '0')}`,
    };
  });
  const policies = Array.from({ length: o.policies }, (_, i) => {
    const ns = nsName(i);
    // Each namespace gets every kind of policy in turn, for a few apps.
    const round = Math.floor(i / nsCount);
    const app = `app-${round % 7}`;
    const kinds = [
      { podSelector: {}, policyTypes: ['Ingress'] },
      {
        podSelector: { matchLabels: { app } },
        ingress: [
          {
            from: [{ podSelector: { matchLabels: { tier: 'web' } } }],
            ports: [{ port: 'http' }, { port: 443 }],
          },
        ],
      },
      {
        podSelector: { matchLabels: { tier: 'api' } },
        ingress: [
          {
            from: [
              {
                namespaceSelector: { matchLabels: { team: `t${i % 5}` } },
                podSelector: { matchLabels: { tier: 'web' } },
              },
            ],
            ports: [{ protocol: 'TCP', port: 8000, endPort: 8100 }],
          },
        ],
      },
      {
        podSelector: { matchLabels: { tier: 'db' } },
        policyTypes: ['Egress'],
        egress: [
          {
            to: [{ ipBlock: { cidr: '0.0.0.0/0', except: ['10.0.0.0/8', '192.168.0.0/16'] } }],
            ports: [{ port: 443 }],
          },
          {
            to: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'ns-0' } } }],
            ports: [
              { protocol: 'UDP', port: 53 },
              { protocol: 'TCP', port: 53 },
            ],
          },
        ],
      },
      {
        podSelector: { matchLabels: { app } },
        policyTypes: ['Egress'],
        egress: [
          {
            to: [
              {
                namespaceSelector: { matchLabels: { env: 'prod' } },
                podSelector: { matchLabels: { app } },
              },
            ],
            ports: [{ port: 'http' }],
          },
        ],
      },
    ];
    return { metadata: { name: `policy-${i}`, namespace: ns }, spec: kinds[round % kinds.length] };
  });
  return { namespaces, pods, policies, local } as unknown as StateInput;
}

/**
 * C ClusterNetworkPolicies and 100 nodes beside syntheticState(): both tiers, every peer kind
 * (namespaces, pods, nodes, networks), ports, ranges and named ports, Accept / Deny / Pass.
 * Subjects rotate over the namespace labels (team, env) so that every local pod has several.
 */
export function syntheticClusterPolicies(
  count: number,
): Pick<StateInput, 'clusterPolicies' | 'nodes'> {
  const nodes = Array.from({ length: 100 }, (_, i) => ({
    metadata: { name: `node-${i}`, labels: { role: i % 10 === 0 ? 'infra' : 'worker' } },
    status: {
      addresses: [
        { type: 'InternalIP', address: `192.168.${i >> 8}.${i & 255}` },
        { type: 'InternalIP', address: `fd00:ffff::${i.toString(16)}` },
        { type: 'Hostname', address: `node-${i}` },
      ],
    },
  }));
  const clusterPolicies = Array.from({ length: count }, (_, i) => {
    const team = `t${i % 5}`;
    const subject =
      i % 2 === 0
        ? { namespaces: { matchLabels: { team } } }
        : {
            pods: {
              namespaceSelector: { matchLabels: { env: i % 4 === 1 ? 'prod' : 'dev' } },
              podSelector: { matchLabels: { tier: TIERS[i % 3] as string } },
            },
          };
    const kinds = [
      {
        ingress: [
          { action: 'Pass', from: [{ namespaces: { matchLabels: { team } } }] },
          {
            action: 'Deny',
            from: [{ namespaces: { matchLabels: { env: 'dev' } } }],
            protocols: [{ tcp: { destinationPort: { range: { start: 8000, end: 8100 } } } }],
          },
        ],
      },
      {
        egress: [
          { action: 'Deny', to: [{ nodes: { matchLabels: { role: 'infra' } } }] },
          {
            action: 'Accept',
            to: [{ networks: ['203.0.113.0/24', '2001:db8::/32'] }],
            protocols: [{ tcp: { destinationPort: { number: 443 } } }],
          },
        ],
      },
      {
        ingress: [
          {
            action: 'Accept',
            from: [
              {
                pods: {
                  namespaceSelector: { matchLabels: { team: 't0' } },
                  podSelector: { matchLabels: { app: `app-${i % 7}` } },
                },
              },
            ],
            protocols: [{ destinationNamedPort: 'metrics' }],
          },
        ],
        egress: [
          {
            action: 'Accept',
            to: [{ namespaces: { matchLabels: { 'kubernetes.io/metadata.name': 'ns-0' } } }],
            protocols: [
              { udp: { destinationPort: { number: 53 } } },
              { destinationNamedPort: 'dns' },
            ],
          },
        ],
      },
    ];
    return {
      metadata: { name: `cnp-${i}` },
      spec: {
        tier: i % 4 === 3 ? 'Baseline' : 'Admin',
        priority: i % 50,
        subject,
        ...kinds[i % kinds.length],
      },
    };
  });
  return { clusterPolicies, nodes } as Pick<StateInput, 'clusterPolicies' | 'nodes'>;
}
