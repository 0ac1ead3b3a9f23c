import { describe, expect, it } from 'vitest';
import type { HostPort } from './port-mapping.js';
import {
  NODE_DAEMON_PORTS,
  reservedHostPortRefusal,
  reservedHostPortsFlag,
  reservationOf,
} from './reserved-host-ports.js';

const flag = reservedHostPortsFlag('--reserved-host-ports');
const m = (over: Partial<HostPort>): HostPort => ({
  protocol: 'tcp',
  hostPort: 80,
  containerPort: 80,
  ...over,
});

describe('reserved hostPorts', () => {
  it("the node daemons' ports, each of its own protocol: BGP TCP 179, BFD UDP 3784 and 4784, the kubelet's TCP ports", () => {
    const owner = (protocol: HostPort['protocol'], hostPort: number) =>
      reservationOf(m({ protocol, hostPort }), NODE_DAEMON_PORTS)?.owner;
    expect(owner('tcp', 179)).toBe('BGP (BIRD)');
    expect(owner('udp', 3784)).toMatch(/^BFD single-hop/);
    expect(owner('udp', 4784)).toMatch(/^BFD multi-hop/);
    for (const port of [10250, 10248, 10255]) expect(owner('tcp', port)).toMatch(/kubelet/);
    // Another protocol on the same port is free: nothing of the node listens there.
    expect(owner('udp', 179)).toBeUndefined();
    expect(owner('sctp', 179)).toBeUndefined();
    expect(owner('tcp', 3784)).toBeUndefined();
    expect(owner('udp', 10250)).toBeUndefined();
    expect(owner('tcp', 8080)).toBeUndefined();
  });

  it('refuses whatever the hostIP: every node address reaches the daemons', () => {
    for (const where of [
      {},
      { family: 4 as const },
      { family: 6 as const },
      { hostIP: '192.0.2.1' },
      { hostIP: '::1' },
    ])
      expect(reservedHostPortRefusal(m({ hostPort: 179, ...where }), NODE_DAEMON_PORTS)).toMatch(
        /^hostPort tcp \S+:179 is reserved on this node: BGP \(BIRD\) uses 179\/tcp on every node address/,
      );
    expect(reservedHostPortRefusal(m({ hostPort: 180 }), NODE_DAEMON_PORTS)).toBeUndefined();
  });

  it('the flag: comma-separated PORT/PROTOCOL or FIRST-LAST/PROTOCOL, protocol in any case; empty: none', () => {
    expect(flag.parse('')).toEqual([]);
    expect(flag.parse(' 22/tcp, 30000-32767/TCP,53/udp ,')).toEqual([
      { protocol: 'tcp', first: 22, last: 22, owner: '--reserved-host-ports' },
      { protocol: 'tcp', first: 30000, last: 32767, owner: '--reserved-host-ports' },
      { protocol: 'udp', first: 53, last: 53, owner: '--reserved-host-ports' },
    ]);
    expect(flag.parse(['9100/sctp'])).toEqual([
      { protocol: 'sctp', first: 9100, last: 9100, owner: '--reserved-host-ports' },
    ]);
    const ranges = flag.parse('30000-32767/tcp');
    expect(reservationOf(m({ hostPort: 30000 }), ranges)).toBeDefined();
    expect(reservationOf(m({ hostPort: 32767 }), ranges)).toBeDefined();
    expect(reservationOf(m({ hostPort: 29999 }), ranges)).toBeUndefined();
    expect(reservationOf(m({ hostPort: 30000, protocol: 'udp' }), ranges)).toBeUndefined();
  });

  it('the flag refuses what is not a port and protocol, naming the entry', () => {
    const error = (text: string) => {
      const r = flag.safeParse(text);
      return r.success ? undefined : r.error.issues.map((i) => i.message).join('; ');
    };
    expect(error('22')).toMatch(/"22" is not PORT\/PROTOCOL/);
    expect(error('ssh/tcp')).toMatch(/"ssh\/tcp" is not PORT\/PROTOCOL/);
    expect(error('22/icmp')).toMatch(/"22\/icmp" has a protocol other than tcp, udp or sctp/);
    expect(error('0/tcp')).toMatch(/outside 1-65535/);
    expect(error('70000/udp')).toMatch(/outside 1-65535/);
    expect(error('90-80/tcp')).toMatch(/first port is above its last/);
    expect(error('22/tcp,x')).toMatch(/"x"/);
    expect(error(Array.from({ length: 65 }, (_, i) => `${i + 1}/tcp`).join(','))).toBeDefined();
  });
});
