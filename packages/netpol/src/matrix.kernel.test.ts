import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireKernelTier } from '@flock/testkit';
import { PolicyLab } from '../testing/lab.js';
import { runScenario } from '../testing/matrix.js';
import { SCENARIOS } from '../testing/scenarios.js';
import { NAMESPACE_LABELS, topology } from '../testing/topology.js';

describe('NetworkPolicy matrix with real packets (kernel)', () => {
  let lab: PolicyLab | undefined;
  beforeAll(async () => {
    requireKernelTier('nft', 'sysctl');
    lab = await PolicyLab.create(NAMESPACE_LABELS, topology());
  });
  afterAll(async () => {
    await lab?.destroy();
  });

  it('has at least 9 local pods in 3 namespaces and 25 scenarios', () => {
    const local = topology().filter((e) => e.local);
    expect(local.length).toBeGreaterThanOrEqual(9);
    expect(new Set(local.map((e) => e.ns)).size).toBe(3);
    expect(SCENARIOS.length).toBeGreaterThanOrEqual(25);
  });

  it.each(SCENARIOS.map((s) => [s.name, s] as const))('%s', async (_name, scenario) => {
    if (!lab) throw new Error('lab not created');
    const report = await runScenario(lab, scenario);
    if (report) console.log(report);
    expect(report).toBe('');
  });
});
