// Private IPv4 between nodes (docs/install.md, "IPv4 modes"). The pods of a Private pool hold
// addresses no router knows, and this kernel class has no tunnel devices; IPv6 is routed
// everywhere. So each node translates statelessly (SIIT, RFC 7915): a packet to another node's
// pod leaves as IPv6 from PREFIX + source to PREFIX + destination, the fabric carries it, and the
// destination node, which announces PREFIX + its slice, translates it back. Nothing is NATed:
// the receiving pod and its NetworkPolicy see the sender's own private address.
import { createHash } from 'node:crypto';
import { cidrString } from './net.js';
import { prefixIs96, prefixNotReserved } from './nat64.js';
import { withRules } from './rules.js';

/** The translation prefix of a Private pool: a /96, global unicast or ULA, of the cluster. */
export const InterNodePrefix = withRules(cidrString('ipv4.interNodePrefix', 6), [
  prefixIs96('ipv4.interNodePrefix', 'fd12:3456:789a:4::/96'),
  prefixNotReserved('ipv4.interNodePrefix', 'a /96 of global unicast space or a ULA (fc00::/7)'),
]);

export const interNodePrefixDescription =
  "Private mode: the IPv6 /96 that carries pods' private IPv4 between nodes, translated statelessly (RFC 7915): each node announces its slice's part of it (a /24 slice is a /120). The routers must carry these routes, and the datacenter edge must drop sources in it from outside. Default: a ULA derived from the Pool's UID.";

/**
 * A Pool's translation prefix when it names none: a ULA (RFC 4193) whose 40-bit global ID comes
 * from the Pool's UID, subnet 4, so two clusters on one fabric (or one Pool recreated) never
 * share one, and the same Pool always has the same.
 */
export function defaultInterNodePrefix(poolUid: string): string {
  const id = createHash('sha256').update(`flock inter-node ${poolUid}`).digest();
  const group = (i: number) => ((id[i]! << 8) | id[i + 1]!).toString(16);
  return `fd${id[0]!.toString(16).padStart(2, '0')}:${group(1)}:${group(3)}:4::/96`;
}
