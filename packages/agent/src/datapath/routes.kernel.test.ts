import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { requireKernelTier } from '@flock/testkit';
import { hostVethName } from './naming.js';
import { KernelHarness } from '../../testing/datapath/harness.js';
import {
  fileServer,
  ipJson,
  pingOnce,
  recordingRunner,
  tcpExchange,
} from '../../testing/datapath/probes.js';
import type { PodSpec } from './types.js';

interface Route {
  type?: string;
  dst: string;
  dev?: string;
  gateway?: string;
  protocol?: string;
  nexthops?: { dev: string; gateway?: string }[];
}

describe('IprouteDatapath node routes (kernel)', () => {
  beforeAll(() => requireKernelTier('nsenter', 'ping', 'socat'));
  let h: KernelHarness | undefined;
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'flock-anycast-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  afterEach(async () => {
    await h?.destroy();
    h = undefined;
  });

  it('keeps exactly the flock blackholes asked for, and leaves other blackholes alone', async () => {
    h = await KernelHarness.create();
    await h.node.exec('ip', ['route', 'add', 'blackhole', '203.0.113.0/24', 'proto', 'static']);
    expect(await h.datapath.ensureBlackholes(['2001:db8:100::/64', '192.0.2.0/26'])).toEqual({
      added: ['192.0.2.0/26', '2001:db8:100::/64'],
      removed: [],
    });
    const show = async () =>
      (await ipJson<Route[]>(h!.node, ['route', 'show', 'table', 'all', 'type', 'blackhole']))
        .map((r) => `${r.dst} ${r.protocol ?? 'boot'}`)
        .sort();
    expect(await show()).toEqual([
      '192.0.2.0/26 241',
      '2001:db8:100::/64 241',
      '203.0.113.0/24 static',
    ]);
    // An address of the summary that no pod has is dropped here, not sent back upstream.
    expect(await pingOnce(h.node, '2001:db8:100::77')).toBe(false);
    expect(await h.datapath.ensureBlackholes(['2001:db8:100::/64'])).toEqual({
      added: [],
      removed: ['192.0.2.0/26'],
    });
    expect(await show()).toEqual(['2001:db8:100::/64 241', '203.0.113.0/24 static']);
  });

  it('routes an anycast address to one pod, then both (multipath), then none; quiet passes write nothing', async () => {
    const rec = recordingRunner();
    h = await KernelHarness.create(rec.runner);
    const pods: PodSpec[] = [];
    for (const [n, id] of [
      [21, 'any-a'],
      [22, 'any-b'],
    ] as const) {
      const ns = await h.newPod();
      const file = join(dir, id);
      await writeFile(file, id);
      fileServer(ns, 7100, file);
      pods.push({
        containerID: id,
        ifName: 'eth0',
        netns: ns.path,
        hostVeth: hostVethName(id, 'eth0'),
        ip6: `2001:db8:100::${n}`,
        ip4: `192.0.2.${n}`,
        anycast: ['2001:db8:aaaa::1', '198.51.100.7'],
      });
      await h.datapath.setupPod(pods.at(-1)!);
    }
    const [a, b] = pods as [PodSpec, PodSpec];
    const route = async (dst: string) =>
      (await ipJson<Route[]>(h!.node, ['route', 'show', 'table', 'all', 'proto', '242'])).filter(
        (r) => r.dst === dst,
      );
    const answers = async (ip: string, times: number) => {
      const seen = new Set<string>();
      for (let i = 0; i < times; i++) seen.add(await tcpExchange(h!.node, ip, 7100));
      return [...seen].sort();
    };

    expect((await h.datapath.ensureAnycastRoute('2001:db8:aaaa::1', [a.hostVeth])).changed).toBe(
      true,
    );
    expect((await h.datapath.ensureAnycastRoute('198.51.100.7', [a.hostVeth])).changed).toBe(true);
    expect(await route('2001:db8:aaaa::1')).toMatchObject([{ dev: a.hostVeth, gateway: a.ip6 }]);
    expect(await route('198.51.100.7')).toMatchObject([{ dev: a.hostVeth }]);
    expect(await answers('2001:db8:aaaa::1', 4)).toEqual(['any-a']);
    expect(await answers('198.51.100.7', 4)).toEqual(['any-a']);

    await h.datapath.ensureAnycastRoute('2001:db8:aaaa::1', [b.hostVeth, a.hostVeth]);
    await h.datapath.ensureAnycastRoute('198.51.100.7', [b.hostVeth, a.hostVeth]);
    // Nexthops are sorted by device name (stable whatever order the caller gives).
    const sorted = [a, b].sort((x, y) => x.hostVeth.localeCompare(y.hostVeth));
    expect((await route('2001:db8:aaaa::1'))[0]?.nexthops).toMatchObject(
      sorted.map((p) => ({ dev: p.hostVeth, gateway: p.ip6 })),
    );
    expect((await route('198.51.100.7'))[0]?.nexthops).toMatchObject(
      sorted.map((p) => ({ dev: p.hostVeth })),
    );
    // fib_multipath_hash_policy=1 hashes on ports: new connections spread over both pods.
    expect(await answers('2001:db8:aaaa::1', 24)).toEqual(['any-a', 'any-b']);
    expect(await answers('198.51.100.7', 24)).toEqual(['any-a', 'any-b']);

    rec.calls.length = 0;
    for (const ip of ['2001:db8:aaaa::1', '198.51.100.7'])
      expect((await h.datapath.ensureAnycastRoute(ip, [a.hostVeth, b.hostVeth])).changed).toBe(
        false,
      );
    expect(rec.calls).toHaveLength(2);
    expect(rec.writes()).toEqual([]);
    expect(await h.datapath.listAnycastRoutes()).toEqual([
      { ip: '198.51.100.7', hostVeths: [a.hostVeth, b.hostVeth].sort() },
      { ip: '2001:db8:aaaa::1', hostVeths: [a.hostVeth, b.hostVeth].sort() },
    ]);

    for (const ip of ['2001:db8:aaaa::1', '198.51.100.7'])
      expect((await h.datapath.ensureAnycastRoute(ip, [])).changed).toBe(true);
    expect(await ipJson(h.node, ['route', 'show', 'table', 'all', 'proto', '242'])).toEqual([]);
    rec.calls.length = 0;
    expect((await h.datapath.ensureAnycastRoute('2001:db8:aaaa::1', [])).changed).toBe(false);
    expect(rec.writes()).toEqual([]);
  });
});
