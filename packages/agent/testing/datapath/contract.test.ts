import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { runContract } from './contract.js';
import { fakeHarness } from './harness.js';

// Recorded from IprouteDatapath on the real kernel (contract.kernel.test.ts checks that it
// still answers exactly this); FakeDatapath must answer the same.
const expected: unknown = JSON.parse(
  readFileSync(new URL('./contract-transcript.json', import.meta.url), 'utf8'),
);

describe('datapath contract (FakeDatapath)', () => {
  it('answers the scripted sequence exactly as the real kernel did', async () => {
    expect(await runContract(fakeHarness())).toEqual(expected);
  });
});
