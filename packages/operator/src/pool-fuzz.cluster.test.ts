// Bad input, Pools through the real API server: generated Pool specs (valid ones and ones
// broken in any field: CIDRs of the wrong family or with host bits, odd spellings, lengths,
// ASNs, peers, timers, selectors, junk) are created against a real control plane with flock's
// CRDs. Each is refused with a clear 422 or accepted; the CRD (OpenAPI + CEL) and the zod
// schema the operator parses with agree on every one; a running operator handles every
// accepted Pool (writes its status) and never logs a failed reconcile or stops.
//
// Round trips are slow next to the unit suites: ROUNDS × BATCH creates (default 1,000, 10,000
// with FLOCK_SOAK=1); the same generator runs 10,000 times against zod alone in
// pool-fuzz.test.ts.
import { API_VERSION, POOL_KIND, Pool } from '@flock/api';
import { KubeApiError, objectPath, POOLS, resourcePath } from '@flock/kube';
import { createMemoryLogger, type MemoryLogger } from '@flock/kube/testing';
import { eventually } from '@flock/testkit';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startOperator, type Operator } from './operator.js';
import { createNode, NAMESPACE, startCluster, type Cluster } from '../testing/cluster.js';
import { poolSpec } from '../testing/pool-arbitrary.js';

const SOAK = process.env['FLOCK_SOAK'] === '1';
const BATCH = 100;
const ROUNDS = SOAK ? 100 : 10;

let c: Cluster;
let op: Operator;
let log: MemoryLogger;

beforeAll(async () => {
  c = await startCluster(['etcd', 'apiserver']);
  log = createMemoryLogger();
  op = await startOperator({
    transport: c.api,
    logger: log,
    identity: 'op-fuzz',
    namespace: NAMESPACE,
    leaderElect: false,
    processMetrics: false,
  });
  // Nodes that generated selectors may pick (label fuzz=a or fuzz=b, or every node).
  await createNode(c.api, 'fuzz-a', { fuzz: 'a' });
  await createNode(c.api, 'fuzz-b', { fuzz: 'b' });
}, 300_000);
afterAll(async () => {
  await op?.stop();
  await c?.cp.stop();
});

/** Create one Pool: the stored object, or the API server's refusal. */
async function create(name: string, spec: unknown) {
  const body = { apiVersion: API_VERSION, kind: POOL_KIND, metadata: { name }, spec };
  try {
    return { stored: await c.api.request({ method: 'POST', path: resourcePath(POOLS), body }) };
  } catch (e) {
    if (e instanceof KubeApiError) return { refused: e };
    throw e;
  }
}

/** A Pool whose reconcile keeps failing: what a crash loop looks like inside the operator. */
const looping = () =>
  log.entries.filter(
    (e) =>
      e.level === 'error' &&
      (!/retrying with backoff/.test(e.message) || Number(e.meta['failures']) >= 3),
  );
/** Reconciles that failed once or twice and then went through (reported with the figures). */
const transient = () => log.entries.filter((e) => e.level === 'error' && !looping().includes(e));

describe('Pools through the real API server: fuzzed specs', () => {
  it(
    `refuses with a clear message or accepts and handles each; CRD and zod agree (${ROUNDS * BATCH} creates)`,
    async () => {
      const tally = { accepted: 0, refused: 0 };
      /** Log position when each round's Pools were deleted (retries after it may be that race). */
      const deletedAt: number[] = [];
      const started = performance.now();
      for (let round = 0; round < ROUNDS; round++) {
        const specs = fc.sample(poolSpec, { numRuns: BATCH, seed: 1000 + round });
        const accepted: string[] = [];
        // A few at a time, as users (and CI) would: keeps the control plane responsive.
        for (let i = 0; i < specs.length; i += 10) {
          await Promise.all(
            specs.slice(i, i + 10).map(async (spec, j) => {
              const name = `fuzz-${round}-${i + j}`;
              const zod = Pool.safeParse({
                apiVersion: API_VERSION,
                kind: POOL_KIND,
                metadata: { name },
                spec,
              });
              const r = await create(name, spec);
              const why = JSON.stringify(spec);
              if ('stored' in r) {
                tally.accepted++;
                accepted.push(name);
                expect(zod.success, `API server accepted what zod refuses: ${why}`).toBe(true);
                // What the operator reads back parses (defaults filled in by the CRD).
                expect(Pool.safeParse(r.stored).success, why).toBe(true);
                return;
              }
              tally.refused++;
              expect(r.refused.code, `${r.refused.message}: ${why}`).toBe(422);
              expect(r.refused.message).toMatch(/spec\./);
              expect(
                zod.success,
                `zod accepted what the API server refused (${r.refused.message}): ${why}`,
              ).toBe(false);
              // Where zod's reasons are all flock's own rules, the user reads one of them.
              if (!zod.success && zod.error.issues.every((x) => x.code === 'custom'))
                expect(
                  zod.error.issues.some((x) => r.refused.message.includes(x.message)),
                  `${r.refused.message} vs ${zod.error.issues.map((x) => x.message).join(' | ')}`,
                ).toBe(true);
            }),
          );
        }
        // Handled: the operator wrote a status for each accepted Pool of this round.
        await eventually(
          `status of ${accepted.length} accepted Pools (round ${round})`,
          async () => {
            for (const name of accepted) {
              const p = Pool.parse(
                await c.api.request({ method: 'GET', path: objectPath(POOLS, name) }),
              );
              if (p.status?.observedGeneration !== p.metadata.generation) return undefined;
            }
            return true;
          },
          { timeoutMs: 120_000 },
        );
        expect(looping(), JSON.stringify(looping().slice(0, 3))).toEqual([]);
        // Clear the round (the operator releases what it held) so the cluster stays small.
        deletedAt.push(log.entries.length);
        await Promise.all(
          accepted.map((name) =>
            c.api.request({ method: 'DELETE', path: objectPath(POOLS, name) }),
          ),
        );
      }
      const seconds = (performance.now() - started) / 1000;
      const retried = transient();
      // Retries of a Pool that still existed (logged before its round deleted it).
      const early = log.entries.filter((e, i) => {
        const round = /^fuzz-(\d+)-/.exec(String(e.meta['key']))?.[1];
        return (
          transient().includes(e) && round !== undefined && i < (deletedAt[Number(round)] ?? 0)
        );
      });
      console.info(
        `pool fuzz: ${ROUNDS * BATCH} creates (${tally.accepted} accepted, ${tally.refused} refused) in ${seconds.toFixed(1)} s; ${retried.length} reconciles retried (${early.length} before their Pool was deleted): ${[...new Set(retried.map((e) => String(e.meta['err']).replace(/fuzz-\d+-\d+/g, 'P')))].join(' | ')}`,
      );
      expect(tally.accepted).toBeGreaterThan((ROUNDS * BATCH) / 10);
      expect(tally.refused).toBeGreaterThan((ROUNDS * BATCH) / 10);
      expect(looping()).toEqual([]);
    },
    SOAK ? 7_200_000 : 900_000,
  );
});
