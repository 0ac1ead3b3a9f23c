// fast-check generator of valid states: a few namespaces, pods, policies using every rule kind
// (selectors, ipBlocks with except, numeric/named/ranged ports of all protocols) and local pods
// with interface names drawn from the whole allowed alphabet.
import fc from 'fast-check';
import type { StateInput } from '../src/state.js';

const key = fc.constantFrom('app', 'tier', 'team');
const value = fc.constantFrom('a', 'b', 'c');
export const labels = fc.dictionary(key, value, { maxKeys: 2 });
const selector = fc.oneof(
  fc.constant({}),
  labels.map((matchLabels) => ({ matchLabels })),
  fc.record({
    matchExpressions: fc.array(
      fc.oneof(
        fc.record({
          key,
          operator: fc.constantFrom('In', 'NotIn'),
          values: fc.array(value, { minLength: 1, maxLength: 2 }),
        }),
        fc.record({ key, operator: fc.constantFrom('Exists', 'DoesNotExist') }),
      ),
      { maxLength: 2 },
    ),
  }),
);
export const protocol = fc.constantFrom('TCP', 'UDP', 'SCTP');
export const portName = fc.constantFrom('http', 'dns', 'metrics');

const ipBlock = fc.oneof(
  fc.tuple(fc.integer({ min: 16, max: 30 }), fc.integer({ min: 0, max: 2 })).map(([len, cuts]) => ({
    cidr: `10.0.0.0/${len}`,
    except: Array.from({ length: cuts }, (_, i) => `10.0.${i}.0/${Math.max(len + 1, 24)}`).filter(
      () => len < 24,
    ),
  })),
  fc
    .integer({ min: 48, max: 120 })
    .map((len) => ({ cidr: `fd00::/${len}`, except: len < 64 ? ['fd00::/64'] : [] })),
  fc.constant({ cidr: '0.0.0.0/0', except: ['10.0.0.0/8'] }),
);
const peer = fc.oneof(
  fc.record({ podSelector: selector }),
  fc.record({ namespaceSelector: selector }),
  fc.record({ podSelector: selector, namespaceSelector: selector }),
  fc.record({ ipBlock }),
);
const port = fc.oneof(
  fc.record({ protocol, port: fc.integer({ min: 1, max: 65535 }) }, { requiredKeys: ['port'] }),
  fc
    .tuple(protocol, fc.integer({ min: 1, max: 60000 }), fc.integer({ min: 0, max: 5000 }))
    .map(([p, lo, span]) => ({
      protocol: p,
      port: lo,
      endPort: lo + span,
    })),
  fc.record({ protocol }),
  fc.record({ protocol, port: portName }, { requiredKeys: ['port'] }),
);
const rule = (peersKey: 'from' | 'to') =>
  fc.record(
    { [peersKey]: fc.array(peer, { maxLength: 3 }), ports: fc.array(port, { maxLength: 3 }) },
    { requiredKeys: [] },
  );

// ClusterNetworkPolicy (v1alpha2): both tiers, few priorities (ties), every peer and protocol kind.
const cnpPort = fc.oneof(
  fc.integer({ min: 1, max: 65535 }).map((number) => ({ number })),
  fc
    .tuple(fc.integer({ min: 1, max: 60000 }), fc.integer({ min: 1, max: 5000 }))
    .map(([start, span]) => ({ range: { start, end: start + span } })),
);
const cnpProtocol = fc.oneof(
  fc
    .tuple(fc.constantFrom('tcp', 'udp', 'sctp'), cnpPort)
    .map(([p, destinationPort]) => ({ [p]: { destinationPort } })),
  portName.map((destinationNamedPort) => ({ destinationNamedPort })),
);
const cnpPods = fc.record({ namespaceSelector: selector, podSelector: selector });
const cnpIngressPeer = fc.oneof(
  selector.map((namespaces) => ({ namespaces })),
  cnpPods.map((pods) => ({ pods })),
);
const cnpEgressPeer = fc.oneof(
  cnpIngressPeer,
  selector.map((nodes) => ({ nodes })),
  fc.constantFrom(['10.0.0.0/22'], ['0.0.0.0/0'], ['fd00::/112']).map((networks) => ({ networks })),
);
const cnpRule = (peersKey: 'from' | 'to') =>
  fc
    .record(
      {
        action: fc.constantFrom('Accept', 'Deny', 'Pass'),
        [peersKey]: fc.array(peersKey === 'from' ? cnpIngressPeer : cnpEgressPeer, {
          minLength: 1,
          maxLength: 2,
        }),
        protocols: fc.array(cnpProtocol, { minLength: 1, maxLength: 2 }),
      },
      { requiredKeys: ['action', peersKey] },
    )
    .map((r) => {
      // The API refuses named ports with nodes and networks peers.
      const peers = r[peersKey] as Record<string, unknown>[];
      const protocols = r['protocols'] as Record<string, unknown>[] | undefined;
      if (!protocols || !peers.some((p) => p['nodes'] || p['networks'])) return r;
      const numeric = protocols.filter((p) => !p['destinationNamedPort']);
      const { protocols: _, ...rest } = r;
      return numeric.length ? { ...rest, protocols: numeric } : rest;
    });
export const clusterPolicies = fc.array(
  fc.record(
    {
      tier: fc.constantFrom('Admin', 'Baseline'),
      priority: fc.integer({ min: 0, max: 3 }),
      subject: fc.oneof(
        selector.map((namespaces) => ({ namespaces })),
        cnpPods.map((pods) => ({ pods })),
      ),
      ingress: fc.array(cnpRule('from'), { maxLength: 2 }),
      egress: fc.array(cnpRule('to'), { maxLength: 2 }),
    },
    { requiredKeys: ['tier', 'priority', 'subject'] },
  ),
  { maxLength: 3 },
);
export interface NodeSpec {
  labels: Record<string, string>;
  host: number;
}
/** Where the pods live: some ranges hold every pod address generated here, some a part. */
export const podRanges: fc.Arbitrary<string[]> = fc.constantFrom<string[]>(
  [],
  ['10.0.0.0/22', 'fd00::/112'],
  ['10.0.1.0/24'],
  ['fd00::/113', '10.0.0.0/23'],
);

export const nodes: fc.Arbitrary<NodeSpec[]> = fc.array(
  fc.record({ labels, host: fc.integer({ min: 0, max: 1023 }) }),
  { maxLength: 3 },
);
/** Node objects: each with an IPv4 and an IPv6 InternalIP (inside the pods' ranges, too). */
export const nodeObjects = (list: readonly NodeSpec[]) =>
  list.map(({ labels, host }, i) => ({
    metadata: { name: `node${i}`, labels },
    status: {
      addresses: [
        { type: 'InternalIP', address: `10.0.${host >> 8}.${host & 255}` },
        { type: 'InternalIP', address: `fd00::1:${host.toString(16)}` },
      ],
    },
  }));

const ifaceName = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,14}$/);

export function arbitraryState(): fc.Arbitrary<StateInput> {
  const namespaces = ['x', 'y', 'z'];
  return fc
    .record({
      nsLabels: fc.array(labels, { minLength: 3, maxLength: 3 }),
      pods: fc.array(
        fc.record({
          ns: fc.constantFrom(...namespaces),
          labels,
          v4: fc.option(fc.integer({ min: 0, max: 1023 }), { nil: undefined }),
          v6: fc.option(fc.integer({ min: 0, max: 0xffff }), { nil: undefined }),
          ports: fc.array(
            fc.record({
              name: portName,
              containerPort: fc.integer({ min: 1, max: 65535 }),
              protocol,
            }),
            { maxLength: 3 },
          ),
        }),
        { maxLength: 10 },
      ),
      policies: fc.array(
        fc.record(
          {
            ns: fc.constantFrom(...namespaces),
            podSelector: selector,
            policyTypes: fc.subarray(['Ingress', 'Egress']),
            ingress: fc.array(rule('from'), { maxLength: 3 }),
            egress: fc.array(rule('to'), { maxLength: 3 }),
          },
          { requiredKeys: ['ns', 'podSelector'] },
        ),
        { maxLength: 6 },
      ),
      clusterPolicies,
      nodes,
      podRanges,
      localMask: fc.array(fc.boolean(), { minLength: 10, maxLength: 10 }),
      ifaces: fc.uniqueArray(ifaceName, { minLength: 10, maxLength: 10 }),
    })
    .map(({ nsLabels, pods, policies, clusterPolicies, nodes, podRanges, localMask, ifaces }) => {
      const podObjects = pods.map((p, i) => ({
        metadata: { name: `p${i}`, namespace: p.ns, labels: p.labels },
        spec: { containers: [{ name: 'c', ports: p.ports }] },
        status: {
          podIPs: [
            ...(p.v4 !== undefined ? [{ ip: `10.0.${p.v4 >> 8}.${p.v4 & 255}` }] : []),
            ...(p.v6 !== undefined ? [{ ip: `fd00::${p.v6.toString(16)}` }] : []),
          ],
        },
      }));
      return {
        namespaces: namespaces.map((name, i) => ({
          metadata: { name, labels: nsLabels[i] ?? {} },
        })),
        pods: podObjects,
        policies: policies.map(({ ns, ...spec }, i) => ({
          metadata: { name: `np${i}`, namespace: ns },
          spec,
        })),
        clusterPolicies: clusterPolicies.map((spec, i) => ({
          metadata: { name: `cnp${i}` },
          spec,
        })),
        nodes: nodeObjects(nodes),
        podRanges,
        local: podObjects.flatMap((p, i) =>
          localMask[i]
            ? [
                {
                  namespace: p.metadata.namespace,
                  name: p.metadata.name,
                  interface: ifaces[i] as string,
                },
              ]
            : [],
        ),
      } as StateInput;
    });
}
