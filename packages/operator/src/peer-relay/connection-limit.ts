// Open connections from one address: the relay listens on the nodes' addresses, which pods
// reach, and a connection costs it a socket and TLS state before any token is shown. An agent
// holds one stream; an address with `maxPerSource` open has its next ones closed at once, so one
// pod (one /128, flock's anti-spoofing) cannot take the descriptors the agents need. Counted by
// the exact address, not by /64 as denials are: a datacenter's nodes often share one /64. A
// node's agent shares its address only with what the node SNATs to it.
import { isIPv4, type Socket } from 'node:net';

/** An address as counted: an IPv4-mapped IPv6 address as the IPv4 address it carries. */
export function connectionSource(address: string): string {
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : '';
  return isIPv4(v4) ? v4 : address;
}

export class ConnectionLimit {
  private readonly open = new Map<string, number>();

  constructor(
    private readonly maxPerSource: number,
    private readonly refused: () => void = () => undefined,
  ) {}

  /** A new connection: kept and counted until it closes, or closed now (false). */
  admit(socket: Socket): boolean {
    const source = connectionSource(socket.remoteAddress ?? '');
    const n = this.open.get(source) ?? 0;
    if (n >= this.maxPerSource) {
      this.refused();
      socket.destroy();
      return false;
    }
    this.open.set(source, n + 1);
    socket.once('close', () => {
      const left = (this.open.get(source) ?? 1) - 1;
      if (left > 0) this.open.set(source, left);
      else this.open.delete(source);
    });
    return true;
  }
}
