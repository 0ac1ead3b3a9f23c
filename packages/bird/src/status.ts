// Reading BIRD's answers to `show protocols`, `show protocols all` and `show bfd sessions`,
// and mapping BGP protocols back to the model's peers for NodeConfig status.
import type { z } from 'zod';
import type { BgpPeerStatus as BgpPeerStatusSchema } from '@flock/api';
import type { BirdPeer } from './model.js';
import { peerProtocolName } from './model.js';
import { BirdProtocolError, type BirdReply } from './reply.js';

/** One row of `show protocols`. */
export interface ProtocolSummary {
  name: string;
  /** Protocol type as BIRD names it: BGP, Static, Device, Kernel, BFD, ... */
  proto: string;
  /** "---" for protocols with several channels (BGP). */
  table: string;
  /** Protocol state: up, down, start, stop. */
  state: string;
  /** When the state last changed, in BIRD's timeformat (e.g. "2026-01-02 03:04:05"). */
  since: string;
  /** For BGP: the BGP state, then BIRD's last error (e.g. "Active  Socket: Connection refused"). */
  info: string;
}

/** Route counts and filters of one channel (from `show protocols all`). */
interface ChannelStatus {
  /** Channel name: ipv6, ipv4, ... */
  name: string;
  state: string;
  table: string;
  inputFilter: string;
  outputFilter: string;
  imported: number;
  exported: number;
  preferred: number;
}

/** One protocol of `show protocols all`. */
export interface ProtocolDetail extends ProtocolSummary {
  /** BGP only: Idle, Connect, Active, OpenSent, OpenConfirm, Established, Down. */
  bgpState?: string;
  neighborAddress?: string;
  neighborAs?: number;
  localAs?: number;
  sourceAddress?: string;
  lastError?: string;
  channels: ChannelStatus[];
}

const CODE_PROTOCOL_ROW = 1002;
const CODE_PROTOCOL_DETAIL = 1006;

// Since: "2026-11-29 19:35:41" (iso long), "19:35:41.813" (iso short ms) or a date.
const SINCE = String.raw`\d{4}-\d{2}-\d{2}(?: \d{2}:\d{2}:\d{2}(?:\.\d+)?)?|\d{2}:\d{2}:\d{2}(?:\.\d+)?`;
const ROW = new RegExp(String.raw`^(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(${SINCE})(?:\s+(.*))?$`);

/** Parse one `show protocols` row. */
export function parseProtocolRow(text: string): ProtocolSummary {
  const m = ROW.exec(text);
  if (!m?.[1] || !m[2] || !m[3] || !m[4] || !m[5]) {
    throw new BirdProtocolError(`unreadable protocol row: ${JSON.stringify(text)}`);
  }
  return {
    name: m[1],
    proto: m[2],
    table: m[3],
    state: m[4],
    since: m[5],
    info: (m[6] ?? '').trim(),
  };
}

/** The rows of a `show protocols` reply. */
export function parseProtocols(reply: BirdReply): ProtocolSummary[] {
  return reply.lines
    .filter((l) => l.code === CODE_PROTOCOL_ROW)
    .map((l) => parseProtocolRow(l.text));
}

/** One session of `show bfd sessions`. */
export interface BfdSession {
  /** The BFD protocol that runs it (flock_bfd on a node). */
  protocol: string;
  address: string;
  /** Interface name; "---" for a multihop session. */
  interface: string;
  /** Up, Down, Init or AdminDown. */
  state: string;
  since: string;
  /** Transmit interval in force, in ms (1000 while the session is down). */
  intervalMs: number;
  /** Detection time in ms: no packet from the peer for this long takes the session down. */
  timeoutMs: number;
}

const CODE_BFD_SESSIONS = 1020;
const BFD_ROW = new RegExp(
  String.raw`^(\S+)\s+(\S+)\s+(Up|Down|Init|AdminDown)\s+(${SINCE})\s+(\d+\.\d+)\s+(\d+\.\d+)$`,
);

/** The sessions of a `show bfd sessions` reply (a heading per BFD protocol, then its rows). */
export function parseBfdSessions(reply: BirdReply): BfdSession[] {
  const out: BfdSession[] = [];
  let protocol = '';
  for (const line of reply.lines) {
    if (line.code !== CODE_BFD_SESSIONS) continue;
    const text = line.text.trim();
    const heading = /^(\S+):$/.exec(text);
    if (heading?.[1]) {
      protocol = heading[1];
      continue;
    }
    const m = BFD_ROW.exec(text);
    if (!m?.[1] || !m[2] || !m[3] || !m[4] || !m[5] || !m[6]) continue; // the column heading
    out.push({
      protocol,
      address: m[1],
      interface: m[2],
      state: m[3],
      since: m[4],
      intervalMs: Math.round(Number(m[5]) * 1000),
      timeoutMs: Math.round(Number(m[6]) * 1000),
    });
  }
  return out;
}

const int = (s: string | undefined) => (s === undefined ? undefined : Number(s));

function channelFrom(name: string): ChannelStatus {
  return {
    name,
    state: '',
    table: '',
    inputFilter: '',
    outputFilter: '',
    imported: 0,
    exported: 0,
    preferred: 0,
  };
}

/** The protocols of a `show protocols all` reply, with BGP details and channel route counts. */
export function parseProtocolsAll(reply: BirdReply): ProtocolDetail[] {
  const out: ProtocolDetail[] = [];
  let current: ProtocolDetail | undefined;
  let channel: ChannelStatus | undefined;
  for (const line of reply.lines) {
    if (line.code === CODE_PROTOCOL_ROW) {
      current = { ...parseProtocolRow(line.text), channels: [] };
      channel = undefined;
      out.push(current);
      continue;
    }
    if (line.code !== CODE_PROTOCOL_DETAIL || !current) continue;
    const text = line.text.trim();
    const channelStart = /^Channel (\S+)$/.exec(text);
    if (channelStart?.[1]) {
      channel = channelFrom(channelStart[1]);
      current.channels.push(channel);
      continue;
    }
    const kv = /^([A-Za-z][A-Za-z ]*?):\s*(.*)$/.exec(text);
    if (!kv?.[1]) continue;
    const [key, value = ''] = [kv[1], kv[2]];
    if (channel) {
      if (key === 'State') channel.state = value;
      else if (key === 'Table') channel.table = value;
      else if (key === 'Input filter') channel.inputFilter = value;
      else if (key === 'Output filter') channel.outputFilter = value;
      else if (key === 'Routes') {
        const r = /^(\d+) imported, (?:(\d+) filtered, )?(\d+) exported, (\d+) preferred$/.exec(
          value,
        );
        if (r) {
          channel.imported = Number(r[1]);
          channel.exported = Number(r[3]);
          channel.preferred = Number(r[4]);
        }
      }
      continue;
    }
    if (key === 'BGP state') current.bgpState = value;
    else if (key === 'Neighbor address') current.neighborAddress = value;
    else if (key === 'Neighbor AS') current.neighborAs = int(value);
    else if (key === 'Local AS') current.localAs = int(value);
    else if (key === 'Source address') current.sourceAddress = value;
    else if (key === 'Last error') current.lastError = value;
  }
  return out;
}

/** Routes imported/exported/preferred by one protocol, summed over its channels. */
export function routeCounts(detail: ProtocolDetail): {
  imported: number;
  exported: number;
  preferred: number;
} {
  return detail.channels.reduce(
    (sum, c) => ({
      imported: sum.imported + c.imported,
      exported: sum.exported + c.exported,
      preferred: sum.preferred + c.preferred,
    }),
    { imported: 0, exported: 0, preferred: 0 },
  );
}

/** One entry of NodeConfig status.bgpPeers. */
type BgpPeerStatus = z.infer<typeof BgpPeerStatusSchema>;

/** The BGP state of a protocol: the "BGP state" detail, else the first word of its info. */
function bgpStateOf(p: ProtocolSummary & { bgpState?: string }): string {
  if (p.bgpState) return p.bgpState;
  const first = p.info.split(/\s+/)[0];
  return first || (p.state === 'down' ? 'Down' : p.state);
}

/**
 * NodeConfig status entries for the model's peers, from `show protocols all`: each peer is
 * found by its protocol name (peerProtocolName). A peer BIRD does not know yet is "NotConfigured".
 */
export function peerStatuses(
  peers: readonly BirdPeer[],
  protocols: readonly ProtocolDetail[],
): BgpPeerStatus[] {
  const byName = new Map(protocols.map((p) => [p.name, p]));
  return peers.map((peer) => {
    const protocol = peerProtocolName(peer.address);
    const p = byName.get(protocol);
    if (!p) return { address: peer.address, asn: peer.asn, protocol, state: 'NotConfigured' };
    const info =
      p.lastError ??
      p.info
        .split(/\s{2,}/)
        .slice(1)
        .join(' ');
    return {
      address: peer.address,
      asn: peer.asn,
      protocol,
      state: bgpStateOf(p),
      since: p.since,
      ...(info ? { info } : {}),
      routesExported: routeCounts(p).exported,
    };
  });
}
