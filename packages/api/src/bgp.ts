// BGP settings shared by Pool (what the operator distributes) and NodeConfig (what one node uses).
import { z } from 'zod';
import { ClassCommunities, Communities } from './communities.js';
import { LabelSelector } from './meta.js';
import { ipString } from './net.js';
import { withRules } from './rules.js';

const RESERVED_ASNS = [0, 23456, 65535, 4294967295];

/** A BGP autonomous system number (4-byte), excluding the reserved values. */
export const Asn = withRules(
  z.int().min(1).max(4294967294).describe('Autonomous system number (1..4294967294).'),
  [
    {
      cel: 'self != 23456 && self != 65535',
      message: 'ASN 23456 (AS_TRANS) and 65535 are reserved and cannot be used',
      check: (n) => !RESERVED_ASNS.includes(n),
    },
  ],
);

const SecretKeyRef = z
  .object({
    name: z.string().min(1).max(253).describe('Secret name.'),
    namespace: z
      .string()
      .min(1)
      .max(63)
      .optional()
      .describe("Secret namespace; defaults to the flock agent's namespace."),
    key: z
      .string()
      .min(1)
      .max(253)
      .default('password')
      .describe('Key in the Secret (default "password").'),
  })
  .describe('Reference to a Secret key.');

/** A BGP session timer in seconds. */
const sessionSeconds = z.int().min(1).max(65535);

/**
 * BFD timers flock writes for a peer with `bfd: true` and no `bfdTimers` (also what the API
 * server fills into a partial `bfdTimers`): 300 ms × 3, a failure detected within 0.9 s, as
 * FRR and most routers default to. BIRD's own defaults (10 ms receive, 100 ms transmit, × 5)
 * are never relied on.
 */
export const DEFAULT_BFD_TIMERS = { minRxIntervalMs: 300, minTxIntervalMs: 300, multiplier: 3 };

const bfdInterval = (what: string, fallback: number) =>
  z
    .int()
    .min(10)
    .max(60_000)
    .default(fallback)
    .describe(`${what}, in milliseconds (10..60000, default ${fallback}).`);

const BfdTimers = z
  .object({
    minRxIntervalMs: bfdInterval(
      'Shortest interval between BFD packets this node is willing to receive',
      DEFAULT_BFD_TIMERS.minRxIntervalMs,
    ),
    minTxIntervalMs: bfdInterval(
      'Shortest interval at which this node wants to send BFD packets',
      DEFAULT_BFD_TIMERS.minTxIntervalMs,
    ),
    multiplier: z
      .int()
      .min(1)
      .max(255)
      .default(DEFAULT_BFD_TIMERS.multiplier)
      .describe(
        `Packets missed in a row before the session is declared down (1..255, default ${DEFAULT_BFD_TIMERS.multiplier}); the router detects a failure after this many of the negotiated intervals.`,
      ),
  })
  .describe(
    'BFD timers of this session; the negotiated interval is the slower of what each side offers.',
  );
type BfdTimers = z.infer<typeof BfdTimers>;

/** Session settings of one BGP peer, as a node uses them. */
export const BgpPeerSettings = {
  address: ipString('peer address').describe("The peer's IP address (the top-of-rack router)."),
  asn: Asn.describe("The peer's autonomous system number."),
  passwordSecretRef: SecretKeyRef.optional().describe(
    'TCP MD5 password for the session, from a Secret.',
  ),
  holdTime: withRules(z.int().min(0).max(65535), [
    {
      cel: 'self == 0 || self >= 3',
      message: 'holdTime must be 0 (no keepalives) or at least 3 seconds',
      check: (n) => n === 0 || n >= 3,
    },
  ])
    .optional()
    .describe('BGP hold time in seconds (default 240 as in BIRD; 0 disables keepalives).'),
  keepaliveTime: z
    .int()
    .min(1)
    .max(21845)
    .optional()
    .describe('Keepalive interval in seconds (default hold time / 3).'),
  gracefulRestart: z
    .boolean()
    .optional()
    .describe(
      'Advertise graceful restart so routes survive an agent or BIRD restart (default true).',
    ),
  bfd: z
    .boolean()
    .optional()
    .describe('Run BFD on the session for sub-second failure detection (default false).'),
  bfdTimers: BfdTimers.optional().describe(
    `BFD timers (with bfd: true); absent: ${DEFAULT_BFD_TIMERS.minRxIntervalMs} ms × ${DEFAULT_BFD_TIMERS.multiplier}.`,
  ),
  multihop: z
    .int()
    .min(1)
    .max(255)
    .optional()
    .describe('eBGP multihop TTL; absent means a directly connected peer.'),
  sourceAddress: ipString('sourceAddress')
    .optional()
    .describe('Local address to source the session from; default: chosen by the kernel.'),
  connectDelayTime: sessionSeconds
    .optional()
    .describe('Seconds to wait before the first connection attempt (default 5 as in BIRD).'),
  connectRetryTime: sessionSeconds
    .optional()
    .describe(
      'Seconds between connection attempts while the session is down (default 120 as in BIRD); lower it so that a session the router dropped comes back sooner.',
    ),
  errorWaitTime: withRules(z.object({ min: sessionSeconds, max: sessionSeconds }), [
    {
      cel: 'self.min <= self.max',
      message: 'errorWaitTime.min must not exceed errorWaitTime.max',
      check: (t) => t.min <= t.max,
    },
  ])
    .optional()
    .describe(
      'Back-off after a session error, growing from min to max seconds (default 60 and 300 as in BIRD).',
    ),
};

/** BIRD's hold time when none is configured. */
export const DEFAULT_HOLD_TIME = 240;

interface PeerTimes {
  holdTime?: number | undefined;
  keepaliveTime?: number | undefined;
  bfd?: boolean | undefined;
  bfdTimers?: unknown;
}

const peerRules = [
  {
    cel: `has(self.holdTime) || !has(self.keepaliveTime) || self.keepaliveTime < ${DEFAULT_HOLD_TIME}`,
    message: `keepaliveTime must be shorter than the default holdTime of ${DEFAULT_HOLD_TIME} seconds (or set holdTime)`,
    check: (p: PeerTimes) =>
      p.holdTime !== undefined ||
      p.keepaliveTime === undefined ||
      p.keepaliveTime < DEFAULT_HOLD_TIME,
  },
  {
    cel: '!has(self.holdTime) || !has(self.keepaliveTime) || self.holdTime == 0 || self.keepaliveTime < self.holdTime',
    message: 'keepaliveTime must be shorter than holdTime',
    check: (p: PeerTimes) =>
      p.holdTime === undefined ||
      p.keepaliveTime === undefined ||
      p.holdTime === 0 ||
      p.keepaliveTime < p.holdTime,
  },
  {
    cel: '!has(self.bfdTimers) || (has(self.bfd) && self.bfd)',
    message: 'bfdTimers tune a BFD session: set bfd: true as well (or remove bfdTimers)',
    field: 'bfdTimers',
    check: (p: PeerTimes) => p.bfdTimers === undefined || p.bfd === true,
  },
];

export const NodeBgpPeer = withRules(z.object(BgpPeerSettings), peerRules).describe(
  'A BGP peer of this node.',
);
export type NodeBgpPeer = z.infer<typeof NodeBgpPeer>;

export const PoolBgpPeer = withRules(
  z.object({
    ...BgpPeerSettings,
    nodeSelector: LabelSelector.optional().describe(
      'Nodes that peer with this router; absent means every node of the pool.',
    ),
  }),
  peerRules,
).describe('A BGP peer; the operator gives it to the nodes its nodeSelector selects.');
export type PoolBgpPeer = z.infer<typeof PoolBgpPeer>;

export const MAX_PEERS = 32;

/** What a pool's nodes attach to their announcements; the operator copies it to each NodeConfig. */
export const BgpRouteSettings = {
  localPreference: z
    .int()
    .min(0)
    .max(4294967295)
    .optional()
    .describe(
      "LOCAL_PREF of every route sent to an iBGP peer (a peer whose asn is the nodes' own); absent: BIRD's default 100. eBGP peers never receive LOCAL_PREF.",
    ),
  communities: ClassCommunities.optional().describe(
    'BGP communities added to every announcement of a class (aggregates, pinned, anycast, services).',
  ),
  allowedPodCommunities: Communities.optional().describe(
    'Communities a pod may add to its own announcements (its pinned and anycast addresses) with the annotation flock.fritzlab.net/bgp-communities; a pod asking for any other is refused at ADD (CNI error 101, Event FlockCommunityRefused).',
  ),
};

/** Each peer address appears once in an object's `peers` list. */
export function uniquePeersRule(what: string) {
  return {
    cel: '!has(self.peers) || self.peers.all(p, self.peers.exists_one(q, q.address == p.address))',
    message: `${what}: each peer address may appear only once`,
    field: 'peers',
    check: (v: { peers?: { address: string }[] | undefined }) =>
      new Set((v.peers ?? []).map((p) => p.address)).size === (v.peers ?? []).length,
  };
}
