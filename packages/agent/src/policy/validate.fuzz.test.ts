// Bad input, NetworkPolicies on the agent's path: arbitrary policy objects (hostile names and
// labels, junk in any field) through checkPolicy, buildPolicyState, the incremental translator
// and the nft renderer, as a reconciler pass runs them. checkPolicy never throws; what it
// cannot enforce becomes a fail-closed stand-in with a message; whatever it hands on always
// translates (one bad policy must not stop enforcement on the node); the script never holds
// input outside escaped comments and quoted interface names.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  IncrementalTranslator,
  NetworkPolicy,
  renderTable,
  tableScript,
  translate,
} from '@flock/netpol';
import { buildPolicyState } from './state.js';
import { entry } from '../../testing/policy.js';
import { checkPolicy } from './validate.js';

const RUNS = process.env['FLOCK_SOAK'] === '1' ? 100_000 : 10_000;
const TIMEOUT = process.env['FLOCK_SOAK'] === '1' ? 1_800_000 : 180_000;

const evil = fc.oneof(
  fc.constantFrom(
    '"; flush ruleset; "',
    '}\nflush ruleset\n{',
    'a" accept comment "',
    '@pod_ifaces',
    '$(reboot)ruleset',
    '\u0000ruleset',
  ),
  fc.string({ minLength: 1, maxLength: 10, unit: 'binary' }).map((s) => `${s}ruleset`),
);
const name = fc.oneof(fc.constantFrom('shop', 'web', 'app'), evil);
const labels = fc.dictionary(name, name, { maxKeys: 3 });
const selector = fc.oneof(
  fc.constant({}),
  labels.map((matchLabels) => ({ matchLabels })),
  fc.record({
    matchExpressions: fc.array(
      fc.record({
        key: name,
        operator: fc.constantFrom('In', 'NotIn', 'Exists', 'DoesNotExist', 'Sideways'),
        values: fc.array(name, { maxLength: 40 }),
      }),
      { maxLength: 3 },
    ),
  }),
);
const ipBlock = fc.record(
  {
    cidr: fc.constantFrom('10.0.0.0/8', 'fd00::/64', '10.0.0.1/8', '0.0.0.0/0', 'x'),
    except: fc.array(fc.constantFrom('10.1.0.0/16', 'fd00::/80', '192.0.2.0/24'), { maxLength: 2 }),
  },
  { requiredKeys: ['cidr'] },
);
const peer = fc.oneof(
  fc.record({ podSelector: selector }),
  fc.record({ namespaceSelector: selector }),
  fc.record({ podSelector: selector, namespaceSelector: selector }),
  fc.record({ ipBlock }),
  // Not a valid peer: both kinds, or neither.
  fc.record({ podSelector: selector, ipBlock }, { requiredKeys: [] }),
);
/** Mostly a valid value, sometimes one of the odd ones. */
const mostly = <T, U>(good: fc.Arbitrary<T>, odd: fc.Arbitrary<U>) =>
  fc.oneof({ weight: 8, arbitrary: good }, { weight: 1, arbitrary: odd });
const port = fc.record(
  {
    protocol: mostly(fc.constantFrom('TCP', 'UDP', 'SCTP'), fc.constant('ICMP')),
    port: mostly(
      fc.oneof(fc.integer({ min: 1, max: 65_535 }), fc.constantFrom('http', 'dns')),
      fc.oneof(fc.integer({ min: -1, max: 70_000 }), evil),
    ),
  },
  { requiredKeys: [] },
);
const rule = (peers: 'from' | 'to') =>
  fc.record(
    { [peers]: fc.array(peer, { maxLength: 3 }), ports: fc.array(port, { maxLength: 3 }) },
    { requiredKeys: [] },
  );
const junk = fc.oneof(evil, fc.jsonValue({ maxDepth: 2 }));
const maybeJunk = <T>(a: fc.Arbitrary<T>) => mostly(a, junk);
const rawPolicy = fc.oneof(
  { weight: 1, arbitrary: junk },
  {
    weight: 12,
    arbitrary: fc.record(
      {
        apiVersion: fc.constant('networking.k8s.io/v1'),
        kind: fc.constant('NetworkPolicy'),
        metadata: maybeJunk(
          fc.record(
            { name: maybeJunk(name), namespace: maybeJunk(fc.constant('shop')), uid: name },
            { requiredKeys: ['name', 'namespace'] },
          ),
        ),
        spec: maybeJunk(
          fc
            .record(
              {
                podSelector: maybeJunk(selector),
                policyTypes: maybeJunk(
                  fc.subarray(['Ingress', 'Egress', 'Sideways'], { minLength: 1 }),
                ),
                ingress: maybeJunk(fc.array(rule('from'), { maxLength: 3 })),
                egress: maybeJunk(fc.array(rule('to'), { maxLength: 3 })),
              },
              { requiredKeys: ['podSelector'] },
            )
            .chain((spec) =>
              // Now and then a field flock does not know (refused, not ignored).
              mostly(
                fc.constant(spec),
                junk.map((j) => ({ ...spec, ingressV2: j })),
              ),
            ),
        ),
      },
      { requiredKeys: ['metadata', 'spec'] },
    ),
  },
);

/** Pods of this node and of the cluster, with labels that hostile selectors may match. */
const locals = [
  { entry: entry('web', '2001:db8:100::5'), labels: { app: 'web' } },
  { entry: entry('db', '2001:db8:100::6', { ip4: '192.0.2.6' }), labels: { app: 'db' } },
].map((l) => ({
  entry: l.entry,
  pod: {
    metadata: { name: l.entry.pod, namespace: 'shop', uid: l.entry.podUID, labels: l.labels },
    spec: {
      containers: [{ ports: [{ name: 'http', containerPort: 80, protocol: 'TCP' as const }] }],
    },
    status: { phase: 'Running', podIPs: [{ ip: l.entry.ip6 }] },
  },
}));
const peerPod = {
  metadata: { name: 'client', namespace: 'shop', uid: 'uid-client', labels: { app: 'shop' } },
  spec: { containers: [] },
  status: { phase: 'Running', podIPs: [{ ip: '2001:db8:200::9' }, { ip: '198.51.100.9' }] },
};

const SAFE_COMMENT = /comment "[A-Za-z0-9 ._/:[\]-]{0,128}"/g;
const QUOTED_IFNAME = /"[A-Za-z0-9][A-Za-z0-9_.-]{0,14}"/g;
/** Lines whose text, once escaped comments and quoted names are out, holds anything unexpected. */
function unsafeLines(script: string): string[] {
  return script
    .split('\n')
    .slice(1) // the header comment
    .filter((line) => {
      const bare = line.replace(SAFE_COMMENT, 'comment c').replace(QUOTED_IFNAME, 'q');
      return (
        !/^(|\t{0,2}\S|\t\t {5}\S)/.test(line) ||
        !/^[A-Za-z0-9\t ._:,/@{}=;!-]*$/.test(bare) ||
        bare.includes('ruleset')
      );
    });
}

describe('agent policy path: fuzzed NetworkPolicy objects', () => {
  it(
    `checks, translates and renders any policy objects without throwing or leaking input (${RUNS} cases)`,
    () => {
      // One long-lived translator, as in the agent: each case is the next state it sees.
      const incremental = new IncrementalTranslator();
      const tally = { valid: 0, standIn: 0, dropped: 0 };
      fc.assert(
        fc.property(fc.array(rawPolicy, { minLength: 1, maxLength: 3 }), (raws) => {
          const checked = raws.flatMap((raw, i) => {
            const c = checkPolicy(raw);
            if (!c) {
              tally.dropped++;
              return [];
            }
            // Fail closed: a stand-in isolates and allows nothing, and says why.
            if (c.problem !== undefined) {
              tally.standIn++;
              expect(c.problem).toMatch(/^networkpolicy .+: .+ — its pods are isolated/s);
              expect(c.policy.spec.ingress ?? []).toEqual([]);
              expect(c.policy.spec.egress ?? []).toEqual([]);
              expect(c.policy.spec.policyTypes?.length).toBeGreaterThan(0);
            } else tally.valid++;
            expect(NetworkPolicy.safeParse(c.policy).success).toBe(true);
            // Distinct names: the API server never holds two objects with one name.
            return [
              {
                ...c,
                policy: {
                  ...c.policy,
                  metadata: { ...c.policy.metadata, name: `${c.policy.metadata.name}-${i}` },
                },
              },
            ];
          });
          const built = buildPolicyState({
            namespaces: [{ metadata: { name: 'shop', labels: { team: 'a' } } }],
            pods: [peerPod],
            policies: checked,
            locals,
          });
          const ir = incremental.translate(built.state);
          expect(ir).toEqual(translate(built.state));
          const script = tableScript(renderTable(ir));
          expect(unsafeLines(script)).toEqual([]);
        }),
        { numRuns: RUNS },
      );
      expect(tally.valid, JSON.stringify(tally)).toBeGreaterThan(RUNS / 20);
      expect(tally.standIn).toBeGreaterThan(RUNS / 10);
      expect(tally.dropped).toBeGreaterThan(0);
    },
    TIMEOUT,
  );
});
