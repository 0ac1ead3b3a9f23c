// hostPort with real packets: flock's DNAT maps in the node namespace of the kernel tier's
// PolicyLab, for clients outside the node, on it, in another pod and in the pod itself.
import type { HostPort } from '@flock/api';
import { run } from '@flock/exec';
import { requireKernelTier } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { policy } from '../testing/builders.js';
import { PolicyLab, UPLINK, type Probe } from '../testing/lab.js';
import { SctpListener, sendSctp } from '../testing/sctp-probe.js';
import { NAMESPACE_LABELS, topology } from '../testing/topology.js';

const tcp = (port: number, family: 4 | 6): Probe => ({ proto: 'tcp', port, family });
const udp = (port: number, family: 4 | 6): Probe => ({ proto: 'udp', port, family });

/** x/a's hostPorts: TCP and UDP on every node address, and TCP on the node's IPv6 uplink only. */
const MAPPINGS: HostPort[] = [
  { protocol: 'tcp', hostPort: 18080, containerPort: 80 },
  { protocol: 'udp', hostPort: 18081, containerPort: 81 },
  { protocol: 'tcp', hostPort: 18082, containerPort: 80, hostIP: UPLINK.node6 },
];

describe('hostPort (kernel)', () => {
  let lab: PolicyLab;
  const some = new Set(['x/a', 'y/a', 'ext']);
  beforeAll(async () => {
    requireKernelTier('nft', 'sysctl', 'nc.openbsd');
    lab = await PolicyLab.create(
      NAMESPACE_LABELS,
      topology().filter((e) => some.has(e.ref)),
    );
  });
  afterAll(async () => {
    await lab?.destroy();
  });

  /** Who answered `from` on the node's uplink address of `p.family`, port p.port. */
  const ask = async (from: string, p: Probe) => (await lab.probe(from, 'node', p, 1500)).reply;

  it('without a mapping nothing answers on the port (the probe can tell)', async () => {
    await lab.apply([]);
    for (const family of [4, 6] as const)
      expect(await ask('ext', tcp(18080, family))).toBeUndefined();
  });

  it('TCP and UDP from outside the node reach the pod on every node address, both families', async () => {
    await lab.apply([], { hostPorts: { 'x/a': MAPPINGS } });
    for (const family of [4, 6] as const) {
      expect(await ask('ext', tcp(18080, family))).toBe('x/a');
      expect(await ask('ext', udp(18081, family))).toBe('x/a');
    }
  });

  it('a mapping with a hostIP answers on that address only', async () => {
    await lab.apply([], { hostPorts: { 'x/a': MAPPINGS } });
    expect(await ask('ext', tcp(18082, 6))).toBe('x/a');
    expect(await ask('ext', tcp(18082, 4))).toBeUndefined();
  });

  it('from the node, from another pod and from the pod itself (hairpin), both families', async () => {
    await lab.apply([], { hostPorts: { 'x/a': MAPPINGS } });
    for (const family of [4, 6] as const) {
      expect(await ask('node', tcp(18080, family))).toBe('x/a');
      expect(await ask('y/a', tcp(18080, family))).toBe('x/a');
      expect(await ask('x/a', tcp(18080, family))).toBe('x/a');
    }
  });

  it("the pod's NetworkPolicy judges DNATed traffic by its real source", async () => {
    // x/a admits only namespace y.
    const onlyY = policy('x/only-y', {
      podSelector: { matchLabels: { pod: 'a' } },
      policyTypes: ['Ingress'],
      ingress: [{ from: [{ namespaceSelector: { matchLabels: { ns: 'y' } } }] }],
    });
    await lab.apply([onlyY], { hostPorts: { 'x/a': MAPPINGS } });
    for (const family of [4, 6] as const) {
      expect(await ask('ext', tcp(18080, family))).toBeUndefined();
      expect(await ask('y/a', tcp(18080, family))).toBe('x/a');
    }
  });

  it('a loopback hostIP serves the node from a node address; from a loopback source nothing is DNATed', async () => {
    const loop: HostPort[] = [
      { protocol: 'tcp', hostPort: 18090, containerPort: 80, hostIP: '127.0.0.1' },
      { protocol: 'tcp', hostPort: 18090, containerPort: 80, hostIP: '::1' },
    ];
    await lab.apply([], { hostPorts: { 'x/a': loop } });
    const nc = (host: string, source?: string) =>
      run(
        'ip',
        [
          ...['netns', 'exec', lab.node.name, 'nc.openbsd', '-z', '-w', '1'],
          ...(source ? ['-s', source] : []),
          ...[host, '18090'],
        ],
        { okCodes: [0, 1] },
      );
    expect((await nc('127.0.0.1', UPLINK.node4)).code).toBe(0);
    expect((await nc('::1', UPLINK.node6)).code).toBe(0);
    // From 127.0.0.1 / ::1 itself: not DNATed (the kernel would drop it), refused by the node.
    expect((await nc('127.0.0.1')).code).toBe(1);
    expect((await nc('::1')).code).toBe(1);
  });

  it('SCTP (crafted packets, no SCTP stack in this kernel): DNATed to the container port with a valid checksum, both families', async () => {
    await lab.apply([], {
      hostPorts: { 'x/a': [{ protocol: 'sctp', hostPort: 19000, containerPort: 9000 }] },
    });
    const listener = await SctpListener.start(lab.podNamespace('x/a'));
    try {
      const xa = lab.endpoint('x/a');
      for (const [family, node, pod] of [
        [4, UPLINK.node4, xa.v4],
        [6, UPLINK.node6, xa.v6],
      ] as const) {
        const token = `hp${family}${Date.now()}`;
        await sendSctp(lab.remote, { dst: node, sport: 40000 + family, dport: 19000, token });
        expect(await listener.seen(token, 2000)).toMatchObject({
          dst: pod,
          dport: 9000,
          crc: 'ok',
        });
        // Another port of the node: not DNATed, never reaches the pod.
        const other = `${token}x`;
        await sendSctp(lab.remote, {
          dst: node,
          sport: 41000 + family,
          dport: 19001,
          token: other,
        });
        expect(await listener.seen(other, 500)).toBeUndefined();
      }
    } finally {
      listener.close();
    }
  });

  it('1,000 mappings: the first and the last answer; the table is one apply', async () => {
    const many: HostPort[] = Array.from({ length: 1000 }, (_, i) => ({
      protocol: 'tcp',
      hostPort: 20000 + i,
      containerPort: 80,
    }));
    await lab.applyTable([], { hostPorts: { 'x/a': many, 'y/a': [MAPPINGS[1]!] } });
    for (const family of [4, 6] as const) {
      expect(await ask('ext', tcp(20000, family))).toBe('x/a');
      expect(await ask('ext', tcp(20999, family))).toBe('x/a');
      expect(await ask('ext', udp(18081, family))).toBe('y/a');
    }
    // One mapping less: a diff, and its port stops answering.
    await lab.applyTable([], { hostPorts: { 'x/a': many.slice(0, 999), 'y/a': [MAPPINGS[1]!] } });
    expect(lab.applier.counts.diff).toBeGreaterThanOrEqual(1);
    expect(await ask('ext', tcp(20999, 6))).toBeUndefined();
    expect(await ask('ext', tcp(20998, 6))).toBe('x/a');
  });
});
