// NAT64 with real packets: the agent's translator (Tayga, supervised) in the node namespace of
// netpol's PolicyLab, and flock's table with the NAT64 part of its SNAT chain. A pod that has IPv6
// only reaches the external host's IPv4 address at the prefix, and the host sees the node's
// address; the translator comes back when Tayga dies, a new agent takes over from a dead one's
// Tayga, and nothing translated reaches the node itself or the cluster's own IPv4 ranges.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '@flock/exec';
import { silentLogger } from '@flock/kube';
import { NAMESPACE_LABELS, PolicyLab, UPLINK, topology } from '@flock/netpol/testing';
import { eventually, requireKernelTier } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nodeSnat } from '../policy/snat.js';
import { hostTranslatorEdge } from './edge.js';
import { NAT64_IFACE, nat64Address } from './tayga.js';
import { Nat64Translator } from './tayga.js';

// A network-specific prefix: the lab's external host is 203.0.113.10 (documentation space), which
// the well-known prefix may not stand for.
const NAT64 = { prefix: '2001:db8:64::/96', pool: '192.168.240.0/20' };
const EXT4 = '203.0.113.10';
const TAYGA = '/usr/sbin/tayga';

describe('NAT64 translator (kernel)', () => {
  let lab: PolicyLab;
  let dir: string;
  const translators: Nat64Translator[] = [];
  let n = 0;
  const translator = () => {
    const t = new Nat64Translator(hostTranslatorEdge(silentLogger, lab.node.name), {
      dir,
      tayga: TAYGA,
      logger: silentLogger,
      restart: { baseMs: 200, maxMs: 1000 },
    });
    translators.push(t);
    return t;
  };

  beforeAll(async () => {
    requireKernelTier('nft', 'tayga', 'conntrack');
    dir = await mkdtemp(join(tmpdir(), 'flock-nat64-'));
    const some = new Set(['x/a', 'x/b', 'ext']);
    lab = await PolicyLab.create(
      NAMESPACE_LABELS,
      topology().filter((e) => some.has(e.ref)),
    );
    await lab.apply([], {
      render: { snat: nodeSnat({ ...baseSpec(), nat64: NAT64 }) },
    });
    await translator().converge(NAT64);
  });
  afterAll(async () => {
    for (const t of translators) await t.stop().catch(() => undefined);
    await lab?.destroy();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  /** UDP from x/a to `host` over IPv6: who answered, and the source the answering server saw. */
  async function udp6(host: string, to = 'ext') {
    const token = `nat64-${process.pid}-${++n}`;
    const answer = await lab.probeAt(
      'x/a',
      host,
      { proto: 'udp', port: 80, family: 6 },
      1500,
      undefined,
      token,
    );
    return { reply: answer.reply, source: await lab.sourceOf(to, token) };
  }
  const viaNat64 = (ipv4: string) => nat64Address(NAT64.prefix, ipv4);
  /** The translator's pool addresses in the masquerade's conntrack entries. */
  async function translatedSources(): Promise<Set<string>> {
    const ct = await lab.node.exec('conntrack', ['-L', '-p', 'udp', '--src-nat'], {
      okCodes: [0, 1],
    });
    return new Set([...ct.stdout.matchAll(/src=(192\.168\.2[45]\d\.\d+) /g)].map((m) => m[1]!));
  }
  const taygaPid = async () => Number((await run('cat', [join(dir, 'tayga.pid')])).stdout.trim());

  it("an IPv6-only pod reaches an IPv4 host at the prefix, from the node's address (UDP and TCP)", async () => {
    expect(await udp6(viaNat64(EXT4))).toEqual({ reply: 'ext', source: UPLINK.node4 });
    const tcp = await lab.probeAt(
      'x/a',
      viaNat64(EXT4),
      { proto: 'tcp', port: 81, family: 6 },
      1500,
    );
    expect(tcp).toMatchObject({ ok: true, reply: 'ext' });
    // The masquerade's conntrack entry: from the translator's pool to the node's address.
    const ct = await lab.node.exec('conntrack', ['-L', '-p', 'udp', '--src-nat'], {
      okCodes: [0, 1],
    });
    expect(ct.stdout).toMatch(/src=192\.168\.24\d\.\d+ dst=203\.0\.113\.10/);
  });

  it('nothing translated reaches the node itself (its IPv4 address at the prefix)', async () => {
    const direct = await lab.probe('x/a', 'node', { proto: 'tcp', port: 80, family: 4 }, 1500);
    expect(direct.ok).toBe(true);
    const tcp6 = { proto: 'tcp', port: 80, family: 6 } as const;
    const translated = await lab.probeAt('x/a', viaNat64(UPLINK.node4), tcp6, 1000);
    expect(translated.ok).toBe(false);
  });

  it('Tayga killed: the translator starts it again, and the pod is reached as before', async () => {
    const before = await taygaPid();
    process.kill(before, 'SIGKILL');
    await eventually(
      'a new Tayga',
      async () => ((await taygaPid()) !== before ? true : undefined),
      {
        timeoutMs: 10_000,
      },
    );
    await eventually(
      'NAT64 again',
      async () => ((await udp6(viaNat64(EXT4))).reply === 'ext' ? true : undefined),
      {
        timeoutMs: 10_000,
      },
    );
    expect(translators[0]!.status().restarts).toBeGreaterThanOrEqual(1);
  });

  it("nothing translated reaches the cluster's own IPv4 ranges; a pod's own IPv4 still does", async () => {
    const guarded = { ...NAT64, clusterCIDRs: [`${EXT4}/32`] };
    await lab.apply([], { render: { snat: nodeSnat({ ...baseSpec(), nat64: guarded }) } });
    try {
      expect((await udp6(viaNat64(EXT4))).reply).toBeUndefined();
      const own = await lab.probe('x/a', 'ext', { proto: 'tcp', port: 81, family: 4 }, 1500);
      expect(own).toMatchObject({ ok: true, reply: 'ext' });
    } finally {
      await lab.apply([], { render: { snat: nodeSnat({ ...baseSpec(), nat64: NAT64 }) } });
    }
    expect((await udp6(viaNat64(EXT4))).reply).toBe('ext');
  });

  it("a pod cannot reach another pod through the translator's pool (no hairpin)", async () => {
    // x/b goes out through NAT64 and so holds a pool address: the one new in conntrack.
    const before = await translatedSources();
    const b = await lab.probeAt('x/b', viaNat64(EXT4), { proto: 'udp', port: 80, family: 6 }, 1500);
    expect(b.reply).toBe('ext');
    const fresh = [...(await translatedSources())].filter((a) => !before.has(a));
    expect(fresh).toHaveLength(1);
    const bPool = fresh[0]!;
    // Reached at the prefix, x/b would see x/a as a NAT64 address, not as the pod it is.
    const hairpin = await lab.probeAt(
      'x/a',
      viaNat64(bPool),
      { proto: 'tcp', port: 80, family: 6 },
      1000,
    );
    expect(hairpin.ok).toBe(false);
  });

  it("a new agent takes over from a dead one's Tayga; off removes the device", async () => {
    // The agent died: its Tayga runs on (here, one started as the agent would, its pid filed).
    await translators[0]!.stop();
    const orphan = lab.node.spawn(TAYGA, ['-c', join(dir, 'tayga.conf'), '-d']);
    await writeFile(join(dir, 'tayga.pid'), `${orphan.pid}\n`);
    await eventually('the orphan translating', async () =>
      (await udp6(viaNat64(EXT4))).reply === 'ext' ? true : undefined,
    );
    const next = translator();
    await next.converge(NAT64);
    expect(await taygaPid()).not.toBe(orphan.pid);
    expect(orphan.exitCode !== null || orphan.signalCode !== null).toBe(true);
    expect(await udp6(viaNat64(EXT4))).toEqual({ reply: 'ext', source: UPLINK.node4 });
    await next.converge(undefined);
    const link = await lab.node.exec('ip', ['link', 'show', NAT64_IFACE], { okCodes: [0, 1] });
    expect(link.code).toBe(1);
    expect((await udp6(viaNat64(EXT4))).reply).toBeUndefined();
  });
});

/** Enough of a NodeConfig spec for nodeSnat: a public node. */
function baseSpec() {
  return {
    pool: 'p',
    cidr6: '2001:db8:1::/64',
    bgp: { asn: 64512, peers: [] },
  } as unknown as Parameters<typeof nodeSnat>[0] & object;
}
