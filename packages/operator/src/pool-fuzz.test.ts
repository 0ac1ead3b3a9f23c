// Bad input, Pools without the API server: the generator of pool-fuzz.cluster.test.ts, 10,000
// times, against the zod schema the operator parses with and the operator's planner. zod never
// throws and names the field of every refusal; every accepted Pool is planned (two nodes, one
// other pool) without throwing, and each NodeConfig the plan would create passes its schema.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { API_VERSION, NodeConfigSpec, POOL_KIND, Pool } from '@flock/api';
import { planPool } from './plan.js';
import { baseSpec, makeNode, makePool, T0 } from '../testing/fixtures.js';
import { poolSpec } from '../testing/pool-arbitrary.js';

const RUNS = process.env['FLOCK_SOAK'] === '1' ? 100_000 : 10_000;
const TIMEOUT = process.env['FLOCK_SOAK'] === '1' ? 1_800_000 : 180_000;

const nodes = [makeNode('fuzz-a', { fuzz: 'a' }), makeNode('fuzz-b', { fuzz: 'b', rack: 'r1' })];
const other = makePool('other', {
  ...baseSpec(),
  nodeSelector: { matchLabels: { fuzz: 'b' } },
  ipv6: { cidr: '2001:db8:100::/48', nodePrefixLength: 64 },
});

describe('Pool specs: fuzzed against zod and the planner', () => {
  it(
    `refuses with a field and a message, or plans without throwing (${RUNS} cases)`,
    () => {
      const tally = { accepted: 0, refused: 0 };
      fc.assert(
        fc.property(poolSpec, (spec) => {
          const raw = {
            apiVersion: API_VERSION,
            kind: POOL_KIND,
            metadata: {
              name: 'fuzz',
              uid: 'uid-fuzz',
              generation: 1,
              creationTimestamp: '2030-01-01T01:00:00Z',
            },
            spec,
          };
          const parsed = Pool.safeParse(raw);
          if (!parsed.success) {
            tally.refused++;
            for (const issue of parsed.error.issues) {
              expect(issue.path[0]).toBe('spec');
              expect(issue.message.length).toBeGreaterThan(5);
            }
            return;
          }
          tally.accepted++;
          const plan = planPool({
            pool: parsed.data,
            pools: [other, parsed.data],
            nodes,
            nodeConfigs: [],
            now: T0 + 3_600_000,
            quarantineMs: 3_600_000,
          });
          for (const step of plan.apply)
            expect(NodeConfigSpec.safeParse(step.object.spec).success, JSON.stringify(step)).toBe(
              true,
            );
        }),
        { numRuns: RUNS },
      );
      expect(tally.accepted).toBeGreaterThan(RUNS / 10);
      expect(tally.refused).toBeGreaterThan(RUNS / 10);
    },
    TIMEOUT,
  );

  it('refuses IPv4-mapped IPv6 addresses as the API server does (CEL isIP/isCIDR)', () => {
    // Found by pool-fuzz.cluster.test.ts: zod took ::ffff:a.b.c.d as IPv6, CEL refuses it.
    const bad = [
      { ipv6: { cidr: '::ffff:0:0/96', nodePrefixLength: 120 } },
      { ipv6: { cidr: '0:0:0:0:0:FFFF:0:0/96', nodePrefixLength: 120 } },
      { bgp: { asn: 64512, peers: [{ address: '::ffff:192.0.2.1', asn: 65000 }] } },
      { anycast: { cidrs: ['::ffff:192.0.2.0/120'] } },
    ];
    for (const change of bad) {
      const parsed = Pool.safeParse({
        apiVersion: API_VERSION,
        kind: POOL_KIND,
        metadata: { name: 'mapped' },
        spec: { ...baseSpec(), ...change },
      });
      expect(parsed.success, JSON.stringify(change)).toBe(false);
    }
  });
});
