// Ports a hostPort may not take: a daemon of the node listens there on the node's addresses,
// and flock's DNAT, which runs before the packet reaches the node's sockets, would hand its
// traffic to the pod (a pod allowed hostPort 179 would take the node's BGP sessions). A
// reservation holds for every node address, whatever the mapping's hostIP: the daemons listen
// on all of them, and a pod given one address would still take that address's traffic.
import { z } from 'zod';
import {
  HOST_PORT_PROTOCOLS,
  describeHostPort,
  type HostPort,
  type HostPortProtocol,
} from './port-mapping.js';

/** Ports of one protocol no hostPort may take, and who listens there. */
export interface ReservedHostPorts {
  protocol: HostPortProtocol;
  first: number;
  last: number;
  /** Who listens there (for the refusal). */
  owner: string;
}

/** At most this many entries in --reserved-host-ports. */
export const MAX_RESERVED_HOST_PORTS = 64;

/** One port of `protocol` reserved for `owner`. */
export const reservedPort = (
  protocol: HostPortProtocol,
  port: number,
  owner: string,
): ReservedHostPorts => ({
  protocol,
  first: port,
  last: port,
  owner,
});

/**
 * The ports of the daemons every flock node runs or may run, on every node address: BIRD's BGP
 * (TCP 179) and BFD (UDP 3784 single-hop, 4784 multi-hop: a NodeConfig may turn BFD on at any
 * time, so they are reserved whether it is on or not) and the kubelet's (TCP 10250 its API,
 * 10248 healthz, 10255 the read-only port). The agent adds its own --health-port.
 */
export const NODE_DAEMON_PORTS: readonly ReservedHostPorts[] = [
  reservedPort('tcp', 179, 'BGP (BIRD)'),
  reservedPort('udp', 3784, 'BFD single-hop (BIRD)'),
  reservedPort('udp', 4784, 'BFD multi-hop (BIRD)'),
  reservedPort('tcp', 10250, 'the kubelet'),
  reservedPort('tcp', 10248, "the kubelet's healthz"),
  reservedPort('tcp', 10255, "the kubelet's read-only port"),
];

const ENTRY = /^(\d{1,5})(?:-(\d{1,5}))?\/([a-z]+)$/i;

/** `PORT/PROTOCOL` or `FIRST-LAST/PROTOCOL` (`22/tcp`, `30000-32767/tcp`), `owner` using them. */
function reservedEntry(owner: string) {
  return z.string().transform((text, ctx): ReservedHostPorts => {
    const m = ENTRY.exec(text.trim());
    const protocol = m?.[3]?.toLowerCase() as HostPortProtocol | undefined;
    const first = Number(m?.[1]);
    const last = m?.[2] === undefined ? first : Number(m[2]);
    const problem = !m
      ? 'is not PORT/PROTOCOL or FIRST-LAST/PROTOCOL (e.g. 22/tcp, 30000-32767/tcp)'
      : !protocol || !HOST_PORT_PROTOCOLS.includes(protocol)
        ? 'has a protocol other than tcp, udp or sctp'
        : first < 1 || last > 65535
          ? 'has a port outside 1-65535'
          : first > last
            ? 'has a range whose first port is above its last'
            : undefined;
    if (problem || !protocol) {
      ctx.addIssue({ code: 'custom', message: `${JSON.stringify(text)} ${problem}` });
      return z.NEVER;
    }
    return { protocol, first, last, owner };
  });
}

/**
 * Reserved ports as a flag gives them: comma-separated `PORT/PROTOCOL` or
 * `FIRST-LAST/PROTOCOL` (empty: none), or a list of them from code; `owner` names the flag.
 */
export function reservedHostPortsFlag(owner: string) {
  return z
    .union([z.array(z.string()), z.string()])
    .transform((v) =>
      (typeof v === 'string' ? v.split(',') : v).map((s) => s.trim()).filter(Boolean),
    )
    .pipe(z.array(reservedEntry(owner)).max(MAX_RESERVED_HOST_PORTS));
}

/** The reservation `m` falls in (same protocol, its host port in range), if any. */
export function reservationOf(
  m: HostPort,
  reserved: readonly ReservedHostPorts[],
): ReservedHostPorts | undefined {
  return reserved.find(
    (r) => r.protocol === m.protocol && m.hostPort >= r.first && m.hostPort <= r.last,
  );
}

/** Why `m` may not be had on this node (undefined: it may). */
export function reservedHostPortRefusal(
  m: HostPort,
  reserved: readonly ReservedHostPorts[],
): string | undefined {
  const r = reservationOf(m, reserved);
  if (!r) return undefined;
  const ports = r.first === r.last ? `${r.first}` : `${r.first}-${r.last}`;
  return `hostPort ${describeHostPort(m)} is reserved on this node: ${r.owner} uses ${ports}/${r.protocol} on every node address (whatever the hostIP)`;
}
