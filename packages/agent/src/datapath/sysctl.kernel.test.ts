import { readFile } from 'node:fs/promises';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Netns, requireKernelTier } from '@flock/testkit';
import { HOST_SYSCTLS } from './datapath.js';
import { IprouteDatapath } from './iproute.js';

describe('applyHostSysctls (kernel)', () => {
  beforeAll(() => requireKernelTier('nsenter', 'sysctl'));
  let node: Netns | undefined;
  afterEach(async () => {
    await node?.destroy();
    node = undefined;
  });

  it('sets forwarding and multipath hashing in the node namespace it is given, and only there', async () => {
    const own = await readFile('/proc/sys/net/ipv4/ip_forward', 'utf8');
    node = await Netns.create('dpsys');
    const read = async (key: string) => (await node!.exec('sysctl', ['-n', key])).stdout.trim();
    expect(await read('net.ipv6.conf.all.forwarding')).toBe('0');
    const res = await new IprouteDatapath({ hostNetns: node.path }).applyHostSysctls();
    expect(res).toEqual(
      Object.entries(HOST_SYSCTLS).map(([key, value]) => ({ key, value, ok: true, changed: true })),
    );
    for (const key of Object.keys(HOST_SYSCTLS)) expect(await read(key)).toBe('1');
    // Set already (by the chart's init container, or a previous start): read, not written.
    const again = await new IprouteDatapath({ hostNetns: node.path }).applyHostSysctls();
    expect(again.map((r) => [r.key, r.ok, r.changed])).toEqual(
      Object.keys(HOST_SYSCTLS).map((key) => [key, true, false]),
    );
    // The machine's own namespace is untouched.
    expect(await readFile('/proc/sys/net/ipv4/ip_forward', 'utf8')).toBe(own);
  });
});
