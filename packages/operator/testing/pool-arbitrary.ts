// fast-check generator of Pool specs for the bad-input suites: a valid spec, then up to three
// fields replaced by values that are good, odd or wrong (wrong family, host bits, leading
// zeros, zone IDs, reserved ASNs, out-of-range timers, duplicate peers, overlapping or too
// wide floating ranges, grants outside their ranges or selecting Services outside
// services.grants, clusterIPs over other ranges, junk types). Values the API server and
// zod cannot compare (null, which the API server prunes) are left out.
import fc from 'fast-check';

const goodCidr6 = [
  '2001:db8:100::/48',
  '2001:db8::/32',
  '2001:db8:100:200::/56',
  '2001:db8:1::/60',
];
const cidr6 = [
  ...goodCidr6,
  '2001:DB8:100::/48',
  '2001:db8:100:0:0::/48',
  '2001:db8:100::1/48',
  '2001:db8:100::/129',
  '2001:db8:100::/048',
  '192.0.2.0/24',
  '::ffff:192.0.2.0/120',
  'fe80::%eth0/64',
  'fd00::/8',
  '2001:db8:100::/48 ',
  '',
  'x'.repeat(80),
];
const goodCidr4 = ['10.0.0.0/8', '192.0.2.0/24', '198.51.100.0/24'];
const cidr4 = [
  ...goodCidr4,
  '10.0.0.1/8',
  '010.0.0.0/8',
  '192.0.2.0/33',
  '2001:db8::/64',
  '1.2.3/24',
];
const anyCidr = [...cidr6.slice(0, 8), ...cidr4];
const asn = [1, 64512, 65000, 4294967294, 65535, 23456, 0, 4294967295, -1, 1.5];
const address = [
  '2001:db8:ffff::1',
  '192.0.2.1',
  '::ffff:192.0.2.1',
  'fe80::1%eth0',
  'x',
  '',
  '2001:db8:ffff::01',
];
const label = fc.constantFrom('a', 'b', 'a b', '', 'x'.repeat(70));
const selector = fc.oneof(
  fc.constant({}),
  fc.record({ matchLabels: fc.record({ fuzz: label }) }),
  fc.record({
    matchExpressions: fc.array(
      fc.record(
        {
          key: fc.constantFrom('fuzz', 'rack', ''),
          operator: fc.constantFrom('In', 'NotIn', 'Exists', 'DoesNotExist', 'Near'),
          values: fc.array(label, { maxLength: 2 }),
        },
        { requiredKeys: ['key', 'operator'] },
      ),
      { maxLength: 2 },
    ),
  }),
);
const junk = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.integer(),
  fc.boolean(),
  fc.constant([]),
  fc.constant({}),
);

const peer = fc.record(
  {
    address: fc.oneof(
      { weight: 4, arbitrary: fc.constant('2001:db8:ffff::1') },
      fc.constantFrom(...address),
    ),
    asn: fc.oneof({ weight: 4, arbitrary: fc.constant(65000) }, fc.constantFrom(...asn)),
    holdTime: fc.constantFrom(0, 1, 3, 90, 240, 65536),
    keepaliveTime: fc.constantFrom(1, 30, 80, 240, 300, 0),
    multihop: fc.constantFrom(1, 2, 255, 256, 0),
    gracefulRestart: fc.oneof(fc.boolean(), junk),
    bfd: fc.boolean(),
    sourceAddress: fc.constantFrom(...address),
    connectRetryTime: fc.constantFrom(1, 5, 120, 65535, 65536, 0),
    errorWaitTime: fc.record({
      min: fc.constantFrom(1, 60, 300, 0),
      max: fc.constantFrom(1, 60, 300, 70000),
    }),
    passwordSecretRef: fc.record(
      {
        name: fc.constantFrom('bgp', ''),
        namespace: fc.constantFrom('flock-system', 'x'.repeat(64)),
        key: fc.constantFrom('password', ''),
      },
      { requiredKeys: ['name'] },
    ),
    nodeSelector: selector,
  },
  { requiredKeys: ['address', 'asn'] },
);

type Spec = Record<string, unknown>;
const valid: fc.Arbitrary<Spec> = fc.record(
  {
    nodeSelector: fc.constantFrom(
      {},
      { matchLabels: { fuzz: 'a' } },
      { matchLabels: { fuzz: 'none' } },
    ),
    ipv6: fc.record({ cidr: fc.constantFrom(...goodCidr6), nodePrefixLength: fc.constant(64) }),
    bgp: fc.record({
      asn: fc.constantFrom(64512, 4200000000),
      peers: fc.constantFrom([], [{ address: '2001:db8:ffff::1', asn: 65000 }]),
    }),
    ipAlgo: fc.constantFrom('random', 'sequential', 'stable'),
  },
  { requiredKeys: ['ipv6', 'bgp'] },
);

/** Set `path` of a copy of the spec (creating objects on the way). */
function set(spec: Spec, path: string[], value: unknown): Spec {
  const [head, ...rest] = path as [string, ...string[]];
  const copy: Spec = { ...spec };
  const child = copy[head];
  copy[head] =
    rest.length === 0
      ? value
      : set(
          child && typeof child === 'object' && !Array.isArray(child) ? (child as Spec) : {},
          rest,
          value,
        );
  return copy;
}
const at = <T>(path: string[], values: fc.Arbitrary<T>) =>
  values.map((v) => (s: Spec) => set(s, path, v));
const cidrList = fc
  .array(fc.constantFrom(...anyCidr), { maxLength: 3 })
  .map((cidrs) => ({ cidrs }));

const grant = fc.record(
  {
    namespaceSelector: selector,
    anyNamespace: fc.oneof(fc.boolean(), junk),
    cidrs: fc.array(fc.constantFrom(...anyCidr, '2001:db8:100::/120', '10.0.0.0/24'), {
      maxLength: 2,
    }),
    // Meaningful only in services.grants: the API server refuses it in the others.
    serviceSelector: selector,
  },
  { requiredKeys: [] },
);
const floatingList = fc.record({
  cidrs: fc.array(fc.constantFrom(...anyCidr, '2001:db8:100::/120', '10.0.0.0/24'), {
    maxLength: 3,
  }),
  grants: fc.array(grant, { maxLength: 2 }),
});

const serviceList = fc.record(
  {
    cidrs: fc.array(fc.constantFrom(...anyCidr, '2001:db8:100::/120', '10.0.0.0/24'), {
      maxLength: 3,
    }),
    grants: fc.array(grant, { maxLength: 2 }),
    clusterIPs: fc.array(fc.constantFrom(...anyCidr, 'fd00:10:96::/112', '10.96.0.0/12'), {
      maxLength: 2,
    }),
  },
  { requiredKeys: ['cidrs'] },
);

const mutation = fc.oneof(
  at(['ipv6', 'cidr'], fc.constantFrom(...cidr6)),
  at(['ipv6', 'nodePrefixLength'], fc.oneof(fc.integer({ min: 40, max: 130 }), fc.constant(64.5))),
  at(['ipv6'], junk),
  at(
    ['ipv4'],
    fc.record({
      cidr: fc.constantFrom(...cidr4),
      nodePrefixLength: fc.integer({ min: 7, max: 34 }),
    }),
  ),
  at(['pinned'], cidrList),
  at(['anycast'], cidrList),
  at(['pinned'], floatingList), // grants: inside their list or not, naming namespaces or not
  at(['anycast'], floatingList),
  at(['services'], serviceList),
  at(['services'], serviceList),
  at(['bgp', 'asn'], fc.constantFrom(...asn)),
  at(['bgp', 'peers'], fc.array(peer, { maxLength: 3 })),
  at(
    ['bgp', 'peers'],
    peer.map((p) => [p, p]),
  ), // the same peer twice
  at(['bgp'], junk),
  at(['nodeSelector'], selector),
  at(['ipAlgo'], fc.constantFrom('random', 'Stable', '', 'sequential ')),
  at(['extraField'], junk), // pruned by the API server, dropped by zod
);

/** A valid Pool spec with 0-3 of its fields replaced. */
export const poolSpec: fc.Arbitrary<Spec> = fc
  .tuple(valid, fc.array(mutation, { maxLength: 3 }))
  .map(([spec, changes]) => changes.reduce((s, change) => change(s), spec));
