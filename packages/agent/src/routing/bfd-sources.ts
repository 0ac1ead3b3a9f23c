// A multihop BFD session needs this node's address as its source (BIRD requires `local`), and
// a Pool's peer cannot name one: the address differs per node. So a multihop peer with BFD and
// no sourceAddress gets the Node's InternalIP of the peer's family, for the BFD session and the
// BGP session alike (the router expects both from the same address). A node without such an
// address keeps the peer, without BFD, and says so: a BGP session without fast failure
// detection beats none at all.
import { ipFamily, type Family } from '@flock/api';
import type { NodeAddress } from './router-id.js';

const PREFERRED_TYPES = ['InternalIP', 'ExternalIP'];

/** The fields of a peer (NodeConfig's or BIRD's) this reads. */
interface Peer {
  address: string;
  bfd?: boolean | undefined;
  bfdTimers?: unknown;
  multihop?: number | undefined;
  sourceAddress?: string | undefined;
}

/** Does this peer need the node's address filled in? */
export const needsBfdSource = (p: Peer): boolean =>
  p.bfd === true && p.multihop !== undefined && p.sourceAddress === undefined;

function nodeAddressOf(family: Family, addresses: readonly NodeAddress[]): string | undefined {
  for (const type of PREFERRED_TYPES) {
    const hit = addresses.find((a) => a.type === type && ipFamily(a.address) === family);
    if (hit) return hit.address;
  }
  return undefined;
}

export interface BfdSources<P> {
  peers: P[];
  /** One line per peer whose BFD had to be left off. */
  warnings: string[];
}

export function withBfdSources<P extends Peer>(
  peers: readonly P[],
  addresses: readonly NodeAddress[],
): BfdSources<P> {
  const warnings: string[] = [];
  const out = peers.map((peer) => {
    if (!needsBfdSource(peer)) return peer;
    const family = ipFamily(peer.address);
    const source = family ? nodeAddressOf(family, addresses) : undefined;
    if (source) return { ...peer, sourceAddress: source };
    warnings.push(
      `BGP peer ${peer.address}: BFD left off: a multihop BFD session needs a source address, the peer sets no sourceAddress and the Node has no IPv${family ?? '?'} InternalIP or ExternalIP`,
    );
    const { bfd: _bfd, bfdTimers: _timers, ...rest } = peer;
    return rest as P;
  });
  return { peers: out, warnings };
}

/**
 * Says the warnings of withBfdSources once (a BfdNotConfigured Event and a log line each), and
 * again only when the set changes or comes back after it was empty.
 */
export class BfdWarnings {
  private last = '';
  constructor(private readonly say: (note: string) => void) {}

  report(warnings: readonly string[]): void {
    const key = warnings.join('\n');
    if (key && key !== this.last) for (const note of warnings) this.say(note);
    this.last = key;
  }
}
