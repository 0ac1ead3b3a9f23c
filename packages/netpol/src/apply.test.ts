import { describe, expect, it } from 'vitest';
import { NftApplier, nftRunner } from './apply.js';

function fakeKernel() {
  const calls: string[] = [];
  let failNext = false;
  const runNft = async (script: string) => {
    await new Promise((r) => setTimeout(r, 1));
    if (failNext) {
      failNext = false;
      throw new Error('nft refused');
    }
    calls.push(script);
  };
  return { calls, runNft, failOnce: () => (failNext = true) };
}

describe('NftApplier', () => {
  it('calls nft only when the script changed', async () => {
    const k = fakeKernel();
    const applier = new NftApplier(k.runNft);
    expect(await applier.apply('A')).toBe(true);
    expect(await applier.apply('A')).toBe(false);
    expect(await applier.apply('B')).toBe(true);
    expect(k.calls).toEqual(['A', 'B']);
    expect(applier.lastApplied).toBe('B');
  });

  it('retries a script whose apply failed', async () => {
    const k = fakeKernel();
    const applier = new NftApplier(k.runNft);
    await applier.apply('A');
    k.failOnce();
    await expect(applier.apply('B')).rejects.toThrow('nft refused');
    expect(applier.lastApplied).toBeUndefined();
    expect(await applier.apply('A')).toBe(true);
    expect(k.calls).toEqual(['A', 'A']);
  });

  it('applies concurrent calls one at a time, in order', async () => {
    const k = fakeKernel();
    const applier = new NftApplier(k.runNft);
    const results = await Promise.all([
      applier.apply('A'),
      applier.apply('A'),
      applier.apply('B'),
      applier.apply('C'),
    ]);
    expect(results).toEqual([true, false, true, true]);
    expect(k.calls).toEqual(['A', 'B', 'C']);
  });

  it('forget() makes the next apply call nft again', async () => {
    const k = fakeKernel();
    const applier = new NftApplier(k.runNft);
    await applier.apply('A');
    applier.forget();
    expect(await applier.apply('A')).toBe(true);
  });

  it('refuses a namespace name that is not one', () => {
    expect(() => nftRunner({ netns: '../etc' })).toThrow(/invalid network namespace name/);
  });
});
