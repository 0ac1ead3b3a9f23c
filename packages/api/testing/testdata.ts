// Example objects shared by the unit tests here and the cluster tests that apply them to a
// real API server: each invalid case carries the message a user must see.
import { API_VERSION, NODECONFIG_KIND, POOL_KIND } from '../src/names.js';
import { invalidClaimCases } from './claims.js';

export const validPoolSpec = () => ({
  nodeSelector: { matchLabels: { 'flock.fritzlab.net/pool': 'dc1' } },
  ipv6: { cidr: '2001:db8:100::/48', nodePrefixLength: 64 },
  ipv4: { cidr: '192.0.2.0/24', nodePrefixLength: 28 },
  nat64: { prefix: '2001:db8:64::/96' },
  pinned: {
    cidrs: ['2001:db8:200::/64', '198.51.100.0/28'],
    grants: [
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'default' } } },
      {
        namespaceSelector: { matchExpressions: [{ key: 'team', operator: 'In', values: ['db'] }] },
        cidrs: ['2001:db8:200::/120', '198.51.100.0/30'],
        communities: { standard: ['65000:666'] },
      },
    ],
  },
  anycast: {
    cidrs: ['2001:db8:300::/120'],
    grants: [{ anyNamespace: true, cidrs: ['2001:db8:300::/124'] }],
  },
  services: {
    cidrs: ['2001:db8:400::/120', '198.51.100.64/28'],
    grants: [
      {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'default' } },
        serviceSelector: { matchLabels: { expose: 'public' } },
      },
      { namespaceSelector: { matchLabels: { team: 'web' } }, cidrs: ['2001:db8:400::/124'] },
    ],
    clusterIPs: ['fd00:10:96::/112', '10.96.0.0/12'],
  },
  bgp: {
    asn: 64512,
    peers: [
      {
        address: '2001:db8:ffff::1',
        asn: 65000,
        holdTime: 9,
        keepaliveTime: 3,
        connectRetryTime: 5,
        errorWaitTime: { min: 5, max: 30 },
        bfd: true,
        bfdTimers: { minRxIntervalMs: 100, minTxIntervalMs: 100, multiplier: 3 },
      },
      { address: '203.0.113.1', asn: 65000, nodeSelector: { matchLabels: { rack: 'r1' } } },
    ],
    localPreference: 200,
    communities: {
      aggregates: { standard: ['65000:100'], large: ['4200000000:1:2'] },
      pinned: { standard: ['65000:200', '65535:65281'] },
      anycast: { large: ['65000:3:0'] },
      services: { standard: ['65000:400'] },
    },
    allowedPodCommunities: { standard: ['65000:666'], large: ['65000:9:9'] },
  },
  ipAlgo: 'stable',
});

export const validNodeConfigSpec = () => ({
  pool: 'dc1',
  cidr6: '2001:db8:100::/64',
  cidr4: '192.0.2.16/28',
  pinnedCIDRs: ['2001:db8:200::/64'],
  anycastCIDRs: ['2001:db8:300::/120'],
  pinnedGrants: [
    { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'default' } } },
  ],
  serviceCIDRs: ['2001:db8:400::/120', '198.51.100.64/28'],
  clusterIPCIDRs: ['fd00:10:96::/112', '10.96.0.0/12'],
  bgp: {
    asn: 64512,
    routerID: '192.0.2.17',
    peers: [{ address: '2001:db8:ffff::1', asn: 65000 }],
    localPreference: 200,
    communities: { aggregates: { standard: ['65000:100'] } },
    allowedPodCommunities: { large: ['65000:9:9'] },
  },
});

/**
 * A Pool at every bound of its floating ranges (64 ranges in each of the three lists, 16
 * grants of 16 ranges, 8 clusterIPs ranges, 32 peers): what the CEL rules cost at the most,
 * for the API server's runtime cost limit.
 */
export const boundedPoolSpec = () => {
  const hex = (n: number) => n.toString(16);
  const ranges = (site: number) =>
    Array.from({ length: 64 }, (_, i) => `2001:db8:${site}::${hex(i * 256)}/120`);
  return {
    ...validPoolSpec(),
    pinned: {
      cidrs: ranges(200),
      grants: Array.from({ length: 16 }, (_, g) => ({
        namespaceSelector: { matchLabels: { team: `t${g}` } },
        cidrs: Array.from({ length: 16 }, (_, c) => `2001:db8:200::${hex(g * 1024 + c * 16)}/124`),
      })),
    },
    anycast: { cidrs: ranges(300), grants: [{ anyNamespace: true }] },
    services: {
      cidrs: ranges(400),
      grants: Array.from({ length: 16 }, (_, g) => ({
        namespaceSelector: { matchLabels: { team: `t${g}` } },
        serviceSelector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['edge'] }] },
        cidrs: Array.from({ length: 16 }, (_, c) => `2001:db8:400::${hex(g * 1024 + c * 16)}/124`),
      })),
      clusterIPs: Array.from({ length: 8 }, (_, i) => `fd00:10:96:${hex(i)}::/112`),
    },
    bgp: {
      asn: 64512,
      peers: Array.from({ length: 32 }, (_, i) => ({
        address: `2001:db8:ffff::${hex(i + 1)}`,
        asn: 65000,
      })),
    },
  };
};

export const poolObject = (name: string, spec: unknown) => ({
  apiVersion: API_VERSION,
  kind: POOL_KIND,
  metadata: { name },
  spec,
});

export const nodeConfigObject = (name: string, spec: unknown) => ({
  apiVersion: API_VERSION,
  kind: NODECONFIG_KIND,
  metadata: { name },
  spec,
});

type Spec = Record<string, unknown> & ReturnType<typeof validPoolSpec>;

export interface InvalidCase {
  name: string;
  kind: 'Pool' | 'NodeConfig' | 'AddressClaim';
  spec: unknown;
  /** The object's name where it matters (an AddressClaim's is its address). */
  objectName?: string;
  /** Text the user sees, from zod here and from the API server in the cluster tier. */
  message: string;
  /** What the API server says instead, where it words the refusal itself (a list-map key). */
  apiServerMessage?: string;
}

const pool = (name: string, edit: (s: Spec) => void, message: string): InvalidCase => {
  const spec = validPoolSpec() as Spec;
  edit(spec);
  return { name, kind: 'Pool', spec, message };
};

const nodeConfig = (
  name: string,
  edit: (s: ReturnType<typeof validNodeConfigSpec> & Record<string, unknown>) => void,
  message: string,
): InvalidCase => {
  const spec = validNodeConfigSpec() as ReturnType<typeof validNodeConfigSpec> &
    Record<string, unknown>;
  edit(spec);
  return { name, kind: 'NodeConfig', spec, message };
};

/** The object of an invalid case, named `fallback` unless the case names it. */
export const invalidObject = (c: InvalidCase, fallback: string) => ({
  apiVersion: API_VERSION,
  kind: c.kind,
  metadata: { name: c.objectName ?? fallback },
  spec: c.spec,
});

export const invalidCases: InvalidCase[] = [
  pool(
    'ipv6 cidr is not a CIDR',
    (s) => (s.ipv6.cidr = '2001:db8::zz/48'),
    'ipv6.cidr must be an IPv6 CIDR such as 2001:db8::/48',
  ),
  pool(
    'ipv6 cidr is IPv4',
    (s) => (s.ipv6.cidr = '10.0.0.0/8'),
    'ipv6.cidr must be an IPv6 CIDR such as 2001:db8::/48',
  ),
  pool(
    'ipv6 cidr has host bits',
    (s) => (s.ipv6.cidr = '2001:db8:100::1/48'),
    'ipv6.cidr has host bits set',
  ),
  pool(
    'ipv4 cidr is IPv6',
    (s) => (s.ipv4.cidr = '2001:db8::/64'),
    'ipv4.cidr must be an IPv4 CIDR such as 192.0.2.0/24',
  ),
  pool(
    'ipv4 cidr has host bits',
    (s) => (s.ipv4.cidr = '192.0.2.1/24'),
    'ipv4.cidr has host bits set',
  ),
  pool(
    'node prefix not longer than the pool',
    (s) => {
      s.ipv6.cidr = '2001:db8::/64';
      s.ipv6.nodePrefixLength = 64;
    },
    "ipv6.nodePrefixLength must be longer than the pool's prefix length",
  ),
  pool(
    'ipv4 node prefix shorter than the pool',
    (s) => (s.ipv4.nodePrefixLength = 20),
    "ipv4.nodePrefixLength must be longer than the pool's prefix length",
  ),
  pool(
    'ipv4 grants without assign: OnRequest',
    (s) => (s.ipv4 = { ...s.ipv4, grants: [{ anyNamespace: true }] } as typeof s.ipv4),
    'ipv4.grants applies to assign: OnRequest only (with Always every pod gets IPv4)',
  ),
  pool(
    'ipv4 grant that names no namespace',
    (s) => (s.ipv4 = { ...s.ipv4, assign: 'OnRequest', grants: [{}] } as typeof s.ipv4),
    'a grant names its namespaces: either namespaceSelector or anyNamespace: true',
  ),
  pool(
    'private ipv4 on request',
    (s) => (s.ipv4 = { ...s.ipv4, mode: 'Private', assign: 'OnRequest' } as typeof s.ipv4),
    'ipv4.assign: OnRequest is for public IPv4 (mode: Public); every pod of a Private pool gets an address',
  ),
  pool(
    'private ipv4 range too small for its default slice',
    (s) => ((s as Record<string, unknown>)['ipv4'] = { cidr: '10.0.0.0/24', mode: 'Private' }),
    "ipv4.nodePrefixLength must be longer than the pool's prefix length",
  ),
  pool(
    'nat64 prefix is not a /96',
    (s) => (s.nat64 = { prefix: '64:ff9b::/64' }),
    'nat64.prefix must be a /96',
  ),
  pool(
    'nat64 prefix in reserved space (RFC 8215 local use)',
    (s) => (s.nat64 = { prefix: '64:ff9b:1::/96' }),
    'nat64.prefix must be 64:ff9b::/96 or a /96 of global unicast space',
  ),
  pool(
    'nat64 prefix link-local',
    (s) => (s.nat64 = { prefix: 'FE80::/96' }),
    'nat64.prefix must be 64:ff9b::/96 or a /96 of global unicast space',
  ),
  pool(
    'nat64 prefix is IPv4',
    (s) => (s.nat64 = { prefix: '192.0.2.0/24' }),
    'nat64.prefix must be an IPv6 CIDR',
  ),
  pool(
    'nat64 pool too large',
    (s) => ((s.nat64 as Record<string, unknown>)['pool'] = '10.0.0.0/8'),
    'nat64.pool must be a /16 to a /28',
  ),
  pool(
    'nat64 pool is IPv6',
    (s) => ((s.nat64 as Record<string, unknown>)['pool'] = '2001:db8::/112'),
    'nat64.pool must be an IPv4 CIDR',
  ),
  pool(
    'ipv4 interNodePrefix on a Public pool',
    (s) => (s.ipv4 = { ...s.ipv4, interNodePrefix: 'fd12:3456:789a:4::/96' } as typeof s.ipv4),
    'ipv4.interNodePrefix applies to mode: Private',
  ),
  pool(
    'ipv4 interNodePrefix is not a /96',
    (s) =>
      ((s as Record<string, unknown>)['ipv4'] = {
        cidr: '10.0.0.0/16',
        mode: 'Private',
        interNodePrefix: 'fd12:3456:789a:4::/64',
      }),
    'ipv4.interNodePrefix must be a /96',
  ),
  pool(
    "ipv4 interNodePrefix inside the pods' IPv6 range",
    (s) =>
      ((s as Record<string, unknown>)['ipv4'] = {
        cidr: '10.0.0.0/16',
        mode: 'Private',
        interNodePrefix: '2001:db8:100:4::/96',
      }),
    'ipv4.interNodePrefix must not overlap ipv6.cidr',
  ),
  pool(
    'ipv4 interNodePrefix is the NAT64 prefix',
    (s) =>
      ((s as Record<string, unknown>)['ipv4'] = {
        cidr: '10.0.0.0/16',
        mode: 'Private',
        interNodePrefix: '2001:db8:64::/96',
      }),
    'ipv4.interNodePrefix must not overlap nat64.prefix',
  ),
  nodeConfig(
    'node nat64 prefix is not a /96',
    (s) => (s['nat64'] = { prefix: '64:ff9b::/32', pool: '192.168.240.0/20' }),
    'nat64.prefix must be a /96',
  ),
  nodeConfig(
    'node ipv4 grants without assign: OnRequest',
    (s) => (s['ipv4'] = { assign: 'Always', grants: [{ anyNamespace: true }] }),
    'ipv4.grants applies to assign: OnRequest only (with Always every pod gets IPv4)',
  ),
  pool(
    'too many node prefixes',
    (s) => (s.ipv6.cidr = '2001:db8::/16'),
    'a pool holds at most 2^32 node prefixes',
  ),
  pool(
    'node prefix length out of range',
    (s) => (s.ipv6.nodePrefixLength = 127),
    'nodePrefixLength',
  ),
  pool('ASN zero', (s) => (s.bgp.asn = 0), 'bgp.asn'),
  pool('ASN AS_TRANS', (s) => (s.bgp.asn = 23456), 'ASN 23456 (AS_TRANS) and 65535 are reserved'),
  pool('ASN too large', (s) => (s.bgp.asn = 4294967296), 'bgp.asn'),
  pool(
    'peer address not an IP',
    (s) => (s.bgp.peers[0]!.address = 'tor1.example'),
    'peer address must be an IPv4 or IPv6 address',
  ),
  pool(
    'duplicate peer',
    (s) => s.bgp.peers.push({ ...s.bgp.peers[0]!, asn: 65001 }),
    'bgp.peers: each peer address may appear only once',
  ),
  pool(
    'hold time 1 second',
    (s) => (s.bgp.peers[0]!.holdTime = 1),
    'holdTime must be 0 (no keepalives) or at least 3 seconds',
  ),
  pool(
    'keepalive not shorter than hold',
    (s) => (s.bgp.peers[0]!.keepaliveTime = 9),
    'keepaliveTime must be shorter than holdTime',
  ),
  pool(
    'error wait time min above max',
    (s) => (s.bgp.peers[0]!.errorWaitTime = { min: 30, max: 10 }),
    'errorWaitTime.min must not exceed errorWaitTime.max',
  ),
  pool(
    'BFD timers without BFD',
    (s) => (s.bgp.peers[1] = { ...s.bgp.peers[1]!, bfdTimers: { multiplier: 3 } as never }),
    'bfdTimers tune a BFD session: set bfd: true as well',
  ),
  pool(
    'BFD interval below 10 ms',
    (s) => (s.bgp.peers[0]!.bfdTimers = { minRxIntervalMs: 1 } as never),
    'bfdTimers.minRxIntervalMs',
  ),
  pool(
    'BFD multiplier zero',
    (s) => (s.bgp.peers[0]!.bfdTimers = { multiplier: 0 } as never),
    'bfdTimers.multiplier',
  ),
  pool(
    'standard community with a half above 16 bits',
    (s) => (s.bgp.communities.aggregates.standard = ['65536:100']),
    'a standard community is two 16-bit numbers A:B, each 0..65535',
  ),
  pool(
    'standard community that is not A:B',
    (s) => (s.bgp.communities.pinned.standard = ['no-export']),
    'a standard community is two',
  ),
  pool(
    'large community with a part above 32 bits',
    (s) => (s.bgp.communities.anycast.large = ['4294967296:1:2']),
    'a large community is three 32-bit numbers A:B:C',
  ),
  pool(
    'a Service-class community with a half above 16 bits',
    (s) => (s.bgp.communities.services.standard = ['65000:65536']),
    'a standard community is two 16-bit numbers A:B, each 0..65535',
  ),
  pool(
    'a standard community among the allowed large ones',
    (s) => (s.bgp.allowedPodCommunities.large = ['65000:9']),
    'a large community is three 32-bit numbers A:B:C',
  ),
  pool('local preference negative', (s) => (s.bgp.localPreference = -1), 'bgp.localPreference'),
  pool(
    'anycast range not a CIDR',
    (s) => (s.anycast.cidrs = ['2001:db8:300::']),
    'anycast.cidrs[] must be an IPv4 or IPv6 CIDR',
  ),
  pool(
    'pinned range with host bits',
    (s) => (s.pinned.cidrs = ['2001:db8:200::5/64']),
    'pinned.cidrs[] has host bits set',
  ),
  pool(
    'pinned ranges overlap each other',
    (s) => s.pinned.cidrs.push('2001:db8:200::/120'),
    'pinned range 2001:db8:200::/64 overlaps pinned range 2001:db8:200::/120',
  ),
  pool(
    'an anycast range listed twice',
    (s) => s.anycast.cidrs.push('2001:db8:300::/120'),
    'anycast range 2001:db8:300::/120 overlaps anycast range 2001:db8:300::/120',
  ),
  pool(
    'pinned and anycast ranges overlap',
    (s) => (s.anycast.cidrs = ['198.51.100.8/29']),
    'pinned range 198.51.100.0/28 overlaps anycast range 198.51.100.8/29',
  ),
  pool(
    "pinned range inside the pool's node range",
    (s) => (s.pinned.cidrs = ['2001:db8:100::/120']),
    "pinned range 2001:db8:100::/120 overlaps the pool's ipv6.cidr 2001:db8:100::/48",
  ),
  pool(
    "anycast range around the pool's IPv4 range",
    (s) => (s.anycast.cidrs = ['192.0.0.0/16']),
    "anycast range 192.0.0.0/16 overlaps the pool's ipv4.cidr 192.0.2.0/24",
  ),
  pool(
    "pinned range holding a peer's address",
    (s) => (s.pinned.cidrs = ['2001:db8:ffff::/120']),
    'pinned range 2001:db8:ffff::/120 contains the BGP peer address 2001:db8:ffff::1',
  ),
  pool(
    "anycast range holding an IPv4 peer's address",
    (s) => (s.anycast.cidrs = ['203.0.113.0/28']),
    'anycast range 203.0.113.0/28 contains the BGP peer address 203.0.113.1',
  ),
  pool(
    'pinned IPv6 range wider than /48',
    (s) => (s.pinned.cidrs = ['2001:db9::/32']),
    'pinned range 2001:db9::/32 is too wide: an IPv6 range must be /48 or longer',
  ),
  pool(
    'anycast range ::/0',
    (s) => (s.anycast.cidrs = ['::/0']),
    'anycast range ::/0 is too wide: an IPv6 range must be /48 or longer',
  ),
  pool(
    'anycast IPv4 range wider than /16',
    (s) => (s.anycast.cidrs = ['10.0.0.0/8']),
    'anycast range 10.0.0.0/8 is too wide: an IPv4 range must be /16 or longer',
  ),
  pool(
    'grant range outside the pinned ranges',
    (s) =>
      s.pinned.grants.push({
        namespaceSelector: {},
        cidrs: ['2001:db8:200::/120', '2001:db8:201::/120'],
      } as never),
    'pinned grant range 2001:db8:201::/120 is not inside any pinned range',
  ),
  pool(
    'grant naming no namespaces',
    (s) => s.pinned.grants.push({ cidrs: ['2001:db8:200::/120'] } as never),
    'a grant names its namespaces: either namespaceSelector or anyNamespace: true',
  ),
  pool(
    'grant selecting Services outside services.grants',
    (s) =>
      s.pinned.grants.push({
        namespaceSelector: {},
        serviceSelector: { matchLabels: { a: 'b' } },
      } as never),
    'pinned.grants[].serviceSelector: only services.grants select Services',
  ),
  pool(
    'services ranges overlap each other',
    (s) => s.services.cidrs.push('2001:db8:400::/124'),
    'services range 2001:db8:400::/120 overlaps services range 2001:db8:400::/124',
  ),
  pool(
    'pinned and services ranges overlap',
    (s) => (s.services.cidrs = ['198.51.100.8/29']),
    'pinned range 198.51.100.0/28 overlaps services range 198.51.100.8/29',
  ),
  pool(
    'anycast and services ranges overlap',
    (s) => (s.services.cidrs = ['2001:db8:300::/124']),
    'anycast range 2001:db8:300::/120 overlaps services range 2001:db8:300::/124',
  ),
  pool(
    "services range inside the pool's node range",
    (s) => (s.services.cidrs = ['2001:db8:100::/120']),
    "services range 2001:db8:100::/120 overlaps the pool's ipv6.cidr 2001:db8:100::/48",
  ),
  pool(
    "services range holding a peer's address",
    (s) => (s.services.cidrs = ['203.0.113.0/28']),
    'services range 203.0.113.0/28 contains the BGP peer address 203.0.113.1',
  ),
  pool(
    'services IPv4 range wider than /16',
    (s) => (s.services.cidrs = ['10.0.0.0/8']),
    'services range 10.0.0.0/8 is too wide: an IPv4 range must be /16 or longer',
  ),
  pool(
    'grant range outside the services ranges',
    (s) => (s.services.grants[1]!.cidrs = ['2001:db8:401::/124']),
    'services grant range 2001:db8:401::/124 is not inside any services range',
  ),
  pool(
    'clusterIPs range not a CIDR',
    (s) => (s.services.clusterIPs = ['fd00:10:96::']),
    'services.clusterIPs[] must be an IPv4 or IPv6 CIDR',
  ),
  pool(
    "clusterIPs range overlapping the pool's IPv4 range",
    (s) => (s.services.clusterIPs = ['192.0.2.128/25']),
    "services.clusterIPs range 192.0.2.128/25 overlaps the pool's ipv4.cidr 192.0.2.0/24",
  ),
  pool(
    'clusterIPs range around a services range',
    (s) => (s.services.clusterIPs = ['2001:db8:400::/112']),
    'services.clusterIPs range 2001:db8:400::/112 overlaps services range 2001:db8:400::/120',
  ),
  pool(
    'clusterIPs range around a pinned range',
    (s) => (s.services.clusterIPs = ['198.51.100.0/24']),
    'services.clusterIPs range 198.51.100.0/24 overlaps pinned range 198.51.100.0/28',
  ),
  pool('unknown ip algorithm', (s) => (s.ipAlgo = 'fastest'), 'ipAlgo'),
  pool(
    'selector In without values',
    (s) => (s.nodeSelector = { matchExpressions: [{ key: 'rack', operator: 'In' }] } as never),
    'values must be non-empty for In and NotIn',
  ),
  pool('ipv6 missing', (s) => delete (s as Record<string, unknown>)['ipv6'], 'ipv6'),
  nodeConfig(
    'cidr6 not IPv6',
    (s) => (s.cidr6 = '192.0.2.0/24'),
    'cidr6 must be an IPv6 CIDR such as 2001:db8::/48',
  ),
  nodeConfig(
    'router ID not IPv4',
    (s) => (s.bgp.routerID = '2001:db8::1'),
    'bgp.routerID must be an IPv4 address such as 192.0.2.1',
  ),
  nodeConfig(
    'NodeConfig standard community with a half above 16 bits',
    (s) => (s.bgp.communities.aggregates.standard = ['1:70000']),
    'a standard community is two 16-bit numbers A:B, each 0..65535',
  ),
  nodeConfig('cidr4 host bits', (s) => (s.cidr4 = '192.0.2.17/28'), 'cidr4 has host bits set'),
  nodeConfig(
    'serviceCIDRs entry not a CIDR',
    (s) => (s.serviceCIDRs = ['2001:db8:400::1']),
    'serviceCIDRs[] must be an IPv4 or IPv6 CIDR',
  ),
  ...invalidClaimCases,
];
