import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { run } from '@flock/exec';
import { Netns, addAddresses, liveNamespaces, vethBetween } from './netns.js';
import { requireKernelTier } from './preflight.js';

describe('Netns (kernel)', () => {
  beforeAll(() => requireKernelTier('ping', 'nft'));
  const made: Netns[] = [];
  afterEach(async () => {
    for (const ns of made.splice(0)) await ns.destroy();
  });
  /** Two namespaces joined by a veth (va–vb), with `${net}.1/30` and `${net}.2/30`. */
  const joined = async (net: string) => {
    const a = await Netns.create('tka');
    const b = await Netns.create('tkb');
    made.push(a, b);
    await vethBetween(a, 'va', b, 'vb');
    await addAddresses(a, 'va', [`${net}.1/30`]);
    await addAddresses(b, 'vb', [`${net}.2/30`]);
    return { a, b };
  };

  it('creates namespaces joined by a veth and removes them with their processes', async () => {
    const { a, b } = await joined('10.99.0');
    const ping = await a.exec('ping', ['-c', '1', '-W', '2', '10.99.0.2']);
    expect(ping.stdout).toContain('1 received');
    const sleeper = b.spawn('sleep', ['60']);
    await a.destroy();
    await b.destroy();
    await new Promise((r) => setTimeout(r, 50));
    expect(sleeper.exitCode !== null || sleeper.signalCode !== null).toBe(true);
    const list = (await run('ip', ['netns', 'list'])).stdout;
    expect(list).not.toContain(a.name);
    expect(list).not.toContain(b.name);
    expect(liveNamespaces()).not.toContain(a.name);
  });

  it('a silenced namespace neither sends nor answers, its links up; unsilenced it answers again', async () => {
    const { a, b } = await joined('10.99.0');
    const ping = (from: Netns, to: string) =>
      from.exec('ping', ['-c', '1', '-W', '1', to], { okCodes: [0, 1, 2] });
    expect((await ping(a, '10.99.0.2')).stdout).toContain('1 received');
    await b.silence();
    expect((await ping(a, '10.99.0.2')).stdout).toContain('0 received');
    expect((await ping(b, '10.99.0.1')).stdout).toContain('0 received');
    expect((await b.exec('ip', ['-o', 'link', 'show', 'vb'])).stdout).toMatch(/state UP/);
    await b.unsilence();
    expect((await ping(a, '10.99.0.2')).stdout).toContain('1 received');
  });

  it('never touches the host namespace: the veth exists only inside', async () => {
    const a = await Netns.create('tkc');
    const b = await Netns.create('tkd');
    made.push(a, b);
    await vethBetween(a, 'vc', b, 'vd');
    const host = (await run('ip', ['-o', 'link'])).stdout;
    expect(host).not.toMatch(/\bvc@|\bvd@/);
  });
});
