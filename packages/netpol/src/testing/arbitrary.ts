// fast-check generator of valid states: a few namespaces, pods, policies using every rule kind
// (selectors, ipBlocks with except, numeric/named/ranged ports of all protocols) and local pods
// with interface names drawn from the whole allowed alphabet.
import fc from 'fast-check';
import type { StateInput } from '../state.js';

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
      localMask: fc.array(fc.boolean(), { minLength: 10, maxLength: 10 }),
      ifaces: fc.uniqueArray(ifaceName, { minLength: 10, maxLength: 10 }),
    })
    .map(({ nsLabels, pods, policies, localMask, ifaces }) => {
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
