import { readFileSync } from 'node:fs';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { requireKernelTier } from '@flock/testkit';
import { runContract } from './contract.js';
import { KernelHarness, fakeHarness } from './harness.js';

const expected: unknown = JSON.parse(
  readFileSync(new URL('./contract-transcript.json', import.meta.url), 'utf8'),
);

describe('datapath contract (IprouteDatapath, kernel)', () => {
  beforeAll(() => requireKernelTier('nsenter'));
  let harness: KernelHarness | undefined;
  afterEach(async () => {
    await harness?.destroy();
    harness = undefined;
  });

  it('answers the scripted sequence as recorded, and as FakeDatapath does', async () => {
    harness = await KernelHarness.create();
    const real = await runContract(harness);
    expect(real).toEqual(expected);
    expect(await runContract(fakeHarness())).toEqual(real);
  });
});
