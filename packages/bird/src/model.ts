// What one node announces over BGP and to whom. The agent builds this from its NodeConfig and
// the pods that live on the node; the renderer turns it into bird.conf. Validated with zod
// because every string here ends up inside a configuration file.
import { z } from 'zod';
import {
  Asn,
  BgpPeerSettings,
  BgpRouteSettings,
  Communities,
  DEFAULT_HOLD_TIME,
  MAX_PEERS,
  cidrString,
  ipFamily,
  ipString,
  ipToBigInt,
  splitCidr,
  type Family,
} from '@flock/api';

/** Most host addresses (pinned or anycast) one model may hold. */
const MAX_HOST_ROUTES = 65_536;
/** Most aggregates one model may hold (a node has one per family; room for more). */
const MAX_AGGREGATES = 64;

/**
 * A TCP MD5 key as BIRD 2.0 can write it: Linux allows at most 80 bytes, and BIRD 2.0 strings
 * have no escapes, so a double quote or a backslash could not be written safely.
 */
const BirdPassword = z
  .string()
  .min(1)
  .max(80)
  .regex(/^[\x20-\x21\x23-\x5b\x5d-\x7e]+$/, {
    message: 'password must be 1-80 printable ASCII characters without a double quote or backslash',
  });

/** BIRD's hold time when none is configured (it then checks the keepalive time against it). */
const BIRD_DEFAULT_HOLD_TIME = DEFAULT_HOLD_TIME;

// The peer as NodeConfig holds it, but with the secret already resolved to its value.
const { passwordSecretRef: _secretRef, ...nodeConfigPeer } = BgpPeerSettings;

export const BirdPeer = z
  .object({
    ...nodeConfigPeer,
    password: BirdPassword.optional().describe(
      'TCP MD5 password (the value of passwordSecretRef).',
    ),
  })
  .superRefine((peer, ctx) => {
    const { holdTime, keepaliveTime, address, sourceAddress } = peer;
    if (ipFamily(address) === 6 && ipToBigInt(address) >> 118n === 0x3fan) {
      ctx.addIssue({
        code: 'custom',
        path: ['address'],
        message:
          'a link-local peer address needs an interface, which flock does not configure: use a global address',
      });
    }
    const effectiveHold = holdTime ?? BIRD_DEFAULT_HOLD_TIME;
    if (keepaliveTime !== undefined && effectiveHold !== 0 && keepaliveTime >= effectiveHold) {
      ctx.addIssue({
        code: 'custom',
        path: ['keepaliveTime'],
        message:
          holdTime === undefined
            ? `keepaliveTime must be shorter than the hold time (BIRD's default ${BIRD_DEFAULT_HOLD_TIME} s when holdTime is not set)`
            : 'keepaliveTime must be shorter than holdTime',
      });
    }
    if (peer.bfd && peer.multihop !== undefined && sourceAddress === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['sourceAddress'],
        message: 'BFD on a multihop session needs a sourceAddress (BIRD requires a local address)',
      });
    }
    if (sourceAddress !== undefined && ipFamily(sourceAddress) !== ipFamily(address)) {
      ctx.addIssue({
        code: 'custom',
        path: ['sourceAddress'],
        message: 'sourceAddress must be of the same address family as the peer address',
      });
    }
  });
export type BirdPeer = z.infer<typeof BirdPeer>;

/** Communities one announced address carries beyond its class's (a pod's own, by annotation). */
const AddressCommunities = Communities.extend({
  address: ipString('addressCommunities[].address'),
});
type AddressCommunities = z.infer<typeof AddressCommunities>;

export const BirdModel = z
  .object({
    routerId: ipString('routerId', 4).describe('BGP router ID (an IPv4 address).'),
    asn: Asn.describe('The ASN this node speaks as.'),
    peers: z.array(BirdPeer).max(MAX_PEERS).describe('BGP peers; one BGP protocol each.'),
    aggregates: z
      .array(cidrString('aggregates[]'))
      .max(MAX_AGGREGATES)
      .describe("The node's prefixes (cidr6, cidr4), announced as they are."),
    pinned: z
      .array(ipString('pinned[]'))
      .max(MAX_HOST_ROUTES)
      .describe('Pinned addresses of pods that live here, announced as /128 or /32.'),
    anycast: z
      .array(ipString('anycast[]'))
      .max(MAX_HOST_ROUTES)
      .describe('Anycast addresses of Ready pods here, announced as /128 or /32.'),
    services: z
      .array(ipString('services[]'))
      .max(MAX_HOST_ROUTES)
      .optional()
      .describe('Service (LoadBalancer) addresses this node announces, as /128 or /32.'),
    serviceRanges: z
      .array(cidrString('serviceRanges[]'))
      .max(MAX_AGGREGATES)
      .optional()
      .describe(
        "The cluster's Service CIDRs, announced as they are (ClusterIPs reach kube-proxy here).",
      ),
    localPreference: BgpRouteSettings.localPreference,
    communities: BgpRouteSettings.communities,
    addressCommunities: z
      .array(AddressCommunities)
      .max(MAX_HOST_ROUTES)
      .optional()
      .describe(
        "Extra communities of single pinned or anycast addresses (their pods'); an address the model does not announce is ignored.",
      ),
  })
  .superRefine((model, ctx) => {
    const seen = new Map<string, number>();
    model.peers.forEach((peer, i) => {
      if (!ipFamily(peer.address)) return; // already reported by the address rule
      const name = peerProtocolName(peer.address);
      const first = seen.get(name);
      if (first !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['peers', i, 'address'],
          message: `peer ${peer.address} is the same address as peers[${first}]`,
        });
      }
      seen.set(name, i);
    });
  });
export type BirdModel = z.infer<typeof BirdModel>;

/** An address in its one canonical text form (IPv4 dotted quad, IPv6 as RFC 5952). */
export function canonicalIp(ip: string): string {
  const family = ipFamily(ip);
  if (!family) throw new Error(`not an IP address: ${JSON.stringify(ip)}`);
  return formatIp(ipToBigInt(ip), family);
}

/** Format a 32- or 128-bit address value (RFC 5952 for IPv6: longest zero run compressed). */
export function formatIp(value: bigint, family: Family): string {
  if (family === 4) {
    const n = Number(value);
    return `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
  }
  // Hex digits, then groups without leading zeros: far cheaper than shifting bigints.
  const hex = value.toString(16).padStart(32, '0');
  const groups: string[] = [];
  for (let i = 0; i < 32; i += 4) groups.push(hex.slice(i, i + 4).replace(/^0{1,3}/, ''));
  let bestStart = -1;
  let bestLength = 1; // a single zero group is never compressed
  for (let i = 0; i < 8;) {
    if (groups[i] !== '0') {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === '0') j++;
    if (j - i > bestLength) [bestStart, bestLength] = [i, j - i];
    i = j;
  }
  if (bestStart < 0) return groups.join(':');
  return `${groups.slice(0, bestStart).join(':')}::${groups.slice(bestStart + bestLength).join(':')}`;
}

/** A CIDR in canonical form ("2001:db8::/64"); the input must be a valid CIDR. */
export function canonicalCidr(cidr: string): string {
  const parts = splitCidr(cidr);
  if (!parts) throw new Error(`not a CIDR: ${JSON.stringify(cidr)}`);
  return `${canonicalIp(parts.address)}/${parts.prefixLength}`;
}

/**
 * The BIRD protocol name of the BGP session with `address`: "peer_" followed by the canonical
 * address with every ":" and "." replaced by "_" (2001:db8::1 → peer_2001_db8__1,
 * 192.0.2.1 → peer_192_0_2_1). Stable, a valid BIRD symbol (at most 44 characters), and
 * distinct for distinct addresses, so the agent can map BIRD's protocol state back to peers.
 */
export function peerProtocolName(address: string): string {
  return `peer_${canonicalIp(address).replace(/[:.]/g, '_')}`;
}
