import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireKernelTier } from '@flock/testkit';
import { policy } from '../testing/builders.js';
import { PolicyLab, type Endpoint, type Probe } from '../testing/lab.js';
import { NAMESPACE_LABELS, topology } from '../testing/topology.js';

const UDP80 = (family: 4 | 6): Probe => ({ proto: 'udp', port: 80, family });
const TCP80: Probe = { proto: 'tcp', port: 80, family: 4 };
const token = () => randomBytes(8).toString('hex');

describe('anti-spoofing and first packet (kernel)', () => {
  let lab: PolicyLab;
  const some = new Set(['x/a', 'x/b', 'y/a', 'x/r', 'ext']);
  beforeAll(async () => {
    requireKernelTier('nft', 'sysctl', 'python3');
    lab = await PolicyLab.create(
      NAMESPACE_LABELS,
      topology().filter((e) => some.has(e.ref)),
    );
    // x/a may now send from x/b's addresses, from an address nobody has, and from its anycast addresses.
    const xa = lab.podNamespace('x/a');
    for (const a of ['10.1.0.2/32', '10.99.0.1/32', '198.51.100.7/32'])
      await xa.exec('ip', ['addr', 'add', a, 'dev', 'eth0']);
    for (const a of ['fd00:1::2/128', '2001:db8:a::7/128'])
      await xa.exec('ip', ['-6', 'addr', 'add', a, 'dev', 'eth0', 'nodad']);
  });
  afterAll(async () => {
    await lab?.destroy();
  });

  /** Send one UDP datagram from x/a with a chosen source to y/a; did y/a's server get it? */
  async function arrives(source: string, family: 4 | 6): Promise<boolean> {
    const t = token();
    await lab.probe('x/a', 'y/a', UDP80(family), 300, source, t);
    return lab.seen('y/a', t);
  }

  it('without flock’s table a forged source gets through (the test can see spoofing)', async () => {
    await lab.removeTable();
    expect(await arrives('10.1.0.2', 4)).toBe(true);
    expect(await arrives('fd00:1::2', 6)).toBe(true);
  });

  it('drops packets whose source is not the pod’s own address, with or without policies', async () => {
    await lab.apply([]);
    expect(await arrives('10.1.0.2', 4)).toBe(false);
    expect(await arrives('10.99.0.1', 4)).toBe(false);
    expect(await arrives('fd00:1::2', 6)).toBe(false);
    expect(await arrives('198.51.100.7', 4)).toBe(false);
    // The pod's real addresses still pass.
    expect(await arrives('10.1.0.1', 4)).toBe(true);
    expect(await arrives('fd00:1::1', 6)).toBe(true);
  });

  it("drops packets from outside that carry a local pod's source (its own or anycast), both families", async () => {
    // The outside host forges x/b's addresses and x/a's anycast address.
    const forged = { v4: ['10.1.0.2', '198.51.100.7'], v6: ['fd00:1::2', '2001:db8:a::7'] };
    for (const a of forged.v4)
      await lab.remote.exec('ip', ['addr', 'add', `${a}/32`, 'dev', 'eth0']);
    for (const a of forged.v6)
      await lab.remote.exec('ip', ['-6', 'addr', 'add', `${a}/128`, 'dev', 'eth0', 'nodad']);
    const fromOutside = async (source: string, family: 4 | 6) => {
      const t = token();
      await lab.probe('ext', 'y/a', UDP80(family), 300, source, t);
      return lab.seen('y/a', t);
    };
    try {
      await lab.removeTable();
      expect(await fromOutside('10.1.0.2', 4)).toBe(true); // the test can see it
      expect(await fromOutside('fd00:1::2', 6)).toBe(true);
      await lab.apply([], { anycast: { 'x/a': ['198.51.100.7', '2001:db8:a::7'] } });
      for (const a of forged.v4) expect(await fromOutside(a, 4), a).toBe(false);
      for (const a of forged.v6) expect(await fromOutside(a, 6), a).toBe(false);
      // The outside's own address still passes.
      expect(await fromOutside('192.0.2.2', 4)).toBe(true);
    } finally {
      for (const a of forged.v4)
        await lab.remote.exec('ip', ['addr', 'del', `${a}/32`, 'dev', 'eth0']);
      for (const a of forged.v6)
        await lab.remote.exec('ip', ['-6', 'addr', 'del', `${a}/128`, 'dev', 'eth0']);
    }
  });

  it("a pod's neighbour solicitations from a forged source are dropped: the node's table gets no entry for it", async () => {
    const pod = lab.podNamespace('y/a');
    const veth = lab.interfaces.get('y/a')!;
    const forged = 'fe80::99';
    await pod.exec('ip', ['-6', 'addr', 'add', `${forged}/64`, 'dev', 'eth0', 'nodad']);
    const solicit = async () => {
      await lab.node.exec('ip', ['-6', 'neigh', 'flush', 'dev', veth]);
      await pod.exec('ip', ['-6', 'neigh', 'flush', 'dev', 'eth0']);
      // A link-local destination from a link-local source: the solicitation leaves from it.
      await pod
        .exec('ping', ['-6', '-c', '1', '-W', '1', '-I', 'eth0', 'fe80::1'])
        .catch(() => undefined); // no answer when the solicitation is dropped
      const { stdout } = await lab.node.exec('ip', ['-6', 'neigh', 'show', 'dev', veth]);
      return stdout;
    };
    try {
      await lab.removeTable();
      expect(await solicit()).toContain(forged); // without flock's table the node learns it
      await lab.apply([]);
      expect(await solicit()).not.toContain(forged);
      // The pod's own address still resolves its gateway (and is reached).
      expect((await lab.probe('node', 'y/a', TCP80, 3000)).reply).toBe('y/a');
    } finally {
      await pod.exec('ip', ['-6', 'addr', 'del', `${forged}/64`, 'dev', 'eth0']);
    }
  });

  it("a pod's router advertisement is dropped: the node takes no route from it", async () => {
    const pod = lab.podNamespace('y/a');
    const veth = lab.interfaces.get('y/a')!;
    const router = 'fe80::5';
    await pod.exec('ip', ['-6', 'addr', 'add', `${router}/64`, 'dev', 'eth0', 'nodad']);
    // The node listens to RAs on this veth even while it forwards (2), so an RA that gets
    // through shows as a default route via the pod; flock's agent sets 0, the guard is the rule.
    await lab.node.exec('sysctl', ['-q', '-w', `net.ipv6.conf.${veth}.accept_ra=2`]);
    // Type 134, hop limit 255 from a link-local source (RFC 4861 6.1.2), router lifetime 1800 s.
    const advertise = `import socket, struct
s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, 255)
s.bind(('${router}', 0, 0, socket.if_nametoindex('eth0')))
s.sendto(struct.pack('!BBHBBHII', 134, 0, 0, 64, 0, 1800, 0, 0), ('ff02::1', 0, 0, socket.if_nametoindex('eth0')))`;
    const routesFromIt = async () => {
      await lab.node.exec('ip', ['-6', 'route', 'flush', 'dev', veth, 'proto', 'ra']);
      await pod.exec('python3', ['-c', advertise]);
      await new Promise((r) => setTimeout(r, 300));
      const { stdout } = await lab.node.exec('ip', [
        '-6',
        'route',
        'show',
        'dev',
        veth,
        'proto',
        'ra',
      ]);
      return stdout;
    };
    try {
      await lab.removeTable();
      expect(await routesFromIt()).toContain(router); // without flock's table the node takes it
      await lab.apply([]);
      expect(await routesFromIt()).toBe('');
    } finally {
      await lab.node.exec('ip', ['-6', 'route', 'flush', 'dev', veth, 'proto', 'ra']);
      await lab.node.exec('sysctl', ['-q', '-w', `net.ipv6.conf.${veth}.accept_ra=0`]);
      await pod.exec('ip', ['-6', 'addr', 'del', `${router}/64`, 'dev', 'eth0']);
    }
  });

  it("a pod's ARP with a forged sender is dropped: the node's table gets no entry for it", async () => {
    const pod = lab.podNamespace('y/a');
    const veth = lab.interfaces.get('y/a')!;
    const forged = '10.77.0.9';
    // The pod resolves the node's uplink address on its link, asking from the forged address:
    // an ARP request for a node address makes the node learn the sender.
    await pod.exec('ip', ['addr', 'add', `${forged}/32`, 'dev', 'eth0']);
    await pod.exec('ip', ['route', 'add', '192.0.2.1/32', 'dev', 'eth0', 'scope', 'link']);
    const ask = async () => {
      await lab.node.exec('ip', ['-4', 'neigh', 'flush', 'dev', veth]);
      await pod.exec('ip', ['-4', 'neigh', 'flush', 'dev', 'eth0']);
      await pod
        .exec('ping', ['-4', '-c', '1', '-W', '1', '-I', forged, '192.0.2.1'])
        .catch(() => undefined); // no answer when the request is dropped
      const { stdout } = await lab.node.exec('ip', ['-4', 'neigh', 'show', 'dev', veth]);
      return stdout;
    };
    try {
      await lab.removeTable();
      expect(await ask()).toContain(forged); // without flock's tables the node learns it
      await lab.apply([]);
      expect(await ask()).not.toContain(forged);
      // The pod's own address still answers the node's ARP (and is reached).
      expect((await lab.probe('node', 'y/a', TCP80, 3000)).reply).toBe('y/a');
      const { stdout } = await lab.node.exec('ip', ['-4', 'neigh', 'show', 'dev', veth]);
      expect(stdout).toContain(lab.endpoint('y/a').v4);
    } finally {
      await pod.exec('ip', ['route', 'del', '192.0.2.1/32', 'dev', 'eth0']);
      await pod.exec('ip', ['addr', 'del', `${forged}/32`, 'dev', 'eth0']);
    }
  });

  it('lets a pod send from the anycast addresses the agent gives it', async () => {
    await lab.apply([], { anycast: { 'x/a': ['198.51.100.7', '2001:db8:a::7'] } });
    expect(await arrives('198.51.100.7', 4)).toBe(true);
    expect(await arrives('2001:db8:a::7', 6)).toBe(true);
    expect(await arrives('10.1.0.2', 4)).toBe(false);
  });

  it('a new pod is isolated by the time apply returns: its first packet is judged by policy', async () => {
    const deny = [
      policy('z/default-deny', { podSelector: {}, policyTypes: ['Ingress', 'Egress'] }),
    ];
    await lab.apply(deny);
    const newPod: Endpoint = {
      ref: 'z/new',
      kind: 'pod',
      local: true,
      ns: 'z',
      pod: 'new',
      labels: { pod: 'new' },
      v4: '10.3.0.50',
      v6: 'fd00:3::50',
    };
    await lab.addPod(newPod); // wired like a CNI ADD; the apply below is what ADD waits for
    await lab.apply(deny);
    const first = await lab.probe('x/a', 'z/new', TCP80, 1000);
    const t = token();
    await lab.probe('x/a', 'z/new', UDP80(6), 300, undefined, t);
    const out = await lab.probe('z/new', 'x/a', TCP80, 1000);
    expect(first.ok).toBe(false);
    expect(await lab.seen('z/new', t)).toBe(false);
    expect(out.ok).toBe(false);
    // The pod was reachable all along: allowing it lets the same probes through.
    await lab.apply([
      policy('z/allow-all', {
        podSelector: {},
        policyTypes: ['Ingress', 'Egress'],
        ingress: [{}],
        egress: [{}],
      }),
    ]);
    expect((await lab.probe('x/a', 'z/new', TCP80, 3000)).reply).toBe('z/new');
    expect((await lab.probe('z/new', 'x/a', TCP80, 3000)).reply).toBe('x/a');
  });

  it('a node port closed to pods (the agent’s metrics): dropped from local pods, open to the node’s other clients', async () => {
    const closed = { render: { nodePortsClosedToPods: [80] } };
    await lab.apply([]);
    expect((await lab.probe('x/a', 'node', TCP80, 1000)).reply).toBe('node');
    await lab.apply([], closed);
    for (const family of [4, 6] as const) {
      const tcp: Probe = { proto: 'tcp', port: 80, family };
      expect((await lab.probe('x/a', 'node', tcp, 500)).ok, `IPv${family} from a pod`).toBe(false);
      expect((await lab.probe('ext', 'node', tcp, 1000)).reply, `IPv${family} from outside`).toBe(
        'node',
      );
      // Only the closed TCP port: the pod's UDP to port 80 of the node still arrives.
      expect((await lab.probe('x/a', 'node', UDP80(family), 1000)).reply).toBe('node');
    }
  });

  it('the node reaches isolated pods (kubelet probes) and replies of allowed connections pass', async () => {
    await lab.apply([
      policy('x/default-deny', { podSelector: {}, policyTypes: ['Ingress', 'Egress'] }),
    ]);
    expect((await lab.probe('node', 'x/a', TCP80, 3000)).reply).toBe('x/a');
    expect(
      (await lab.probe('node', 'x/a', { proto: 'udp', port: 81, family: 6 }, 3000)).reply,
    ).toBe('x/a');
    expect((await lab.probe('y/a', 'x/a', TCP80, 500)).ok).toBe(false);
  });
});
