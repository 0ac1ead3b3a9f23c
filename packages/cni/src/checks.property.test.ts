// The plugin's hand-written checks against the zod schemas they stand in for: on generated
// requests and replies, both accept the same ones, name the same fields when they refuse, and
// hand on the same value when they accept.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AGENT_COMMANDS, AgentResponse, formatFieldPath, parseAgentRequest } from '@flock/api';
import { asAgentRequest, parseReply, requestProblems } from './checks.js';

const RUNS = 3000;

/** Any JSON value, shallow: what a careless or hostile peer might put in a field. */
const anything = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.boolean(),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 2 }),
  fc.dictionary(fc.string({ maxLength: 3 }), fc.integer(), { maxKeys: 2 }),
);
const maybe = <T>(good: fc.Arbitrary<T>, ...odd: fc.Arbitrary<unknown>[]) =>
  fc.oneof({ weight: 4, arbitrary: good }, ...odd.map((a) => ({ weight: 1, arbitrary: a })), {
    weight: 1,
    arbitrary: anything,
  });
const idChars = fc.constantFrom(...'abcXYZ019_.-/: ;'.split(''));
const word = (min: number, max: number) =>
  fc.array(idChars, { minLength: min, maxLength: max }).map((a) => a.join(''));

const attachment = fc.record(
  { containerID: maybe(word(1, 8)), ifname: maybe(fc.constant('eth0')), extra: fc.integer() },
  { requiredKeys: [] },
);
const config = fc.record(
  {
    cniVersion: maybe(fc.constantFrom('1.1.0', '0.4.0')),
    name: maybe(fc.constantFrom('flock', '')),
    type: maybe(fc.constant('flock'), fc.constant('bridge')),
    socketPath: maybe(fc.constantFrom('/run/flock/cni.sock', 'run/x', '')),
    timeoutMs: maybe(
      fc.integer({ min: 0, max: 700_000 }),
      fc.constantFrom(1.5, 2 ** 60, 600_000, 100, 99, 600_001),
    ),
    prevResult: maybe(fc.constantFrom({}, { cniVersion: '1.0.0', ips: [] })),
    'cni.dev/valid-attachments': maybe(fc.array(maybe(attachment), { maxLength: 3 })),
    ipam: anything,
  },
  { requiredKeys: ['type'] },
);
const request = fc.record(
  {
    command: maybe(fc.constantFrom(...AGENT_COMMANDS), fc.constant('VERSION')),
    containerID: maybe(
      word(1, 10),
      fc.string({ minLength: 250, maxLength: 260, unit: 'grapheme-ascii' }),
    ),
    netns: maybe(
      fc.constantFrom('/run/netns/cni-1', '/proc/1/ns/net', '/a/../b', 'rel', '/x y'),
      word(0, 10).map((w) => `/${w}`),
    ),
    ifName: maybe(fc.constantFrom('eth0', '.', '..', 'a'.repeat(15), 'a'.repeat(16)), word(0, 16)),
    args: maybe(
      fc.dictionary(
        fc.oneof(fc.string({ maxLength: 5 }), fc.constant('k'.repeat(254))),
        maybe(fc.string({ maxLength: 5 }), fc.constant('v'.repeat(1025))),
        { maxKeys: 3 },
      ),
    ),
    config: maybe(config),
  },
  { requiredKeys: [] },
);

const fields = (paths: readonly (readonly PropertyKey[])[]) =>
  [...new Set(paths.map((p) => formatFieldPath('', p)))].sort();

describe('hand-written checks = the zod schemas', () => {
  it('requestProblems refuses exactly what parseAgentRequest refuses, naming the same fields', () => {
    fc.assert(
      fc.property(request, (req) => {
        const zod = parseAgentRequest(req);
        const hand = requestProblems(req);
        expect(fields(hand.map((p) => p.path))).toEqual(
          fields(zod.success ? [] : zod.problems.map((p) => p.path)),
        );
        if (zod.success) {
          // What the agent will see (after its own parse) is what the plugin meant to send.
          const sent = parseAgentRequest(asAgentRequest(req));
          expect(sent).toEqual(zod);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it('refuses non-objects like the schema', () => {
    for (const v of [null, [], 'x', 1, true])
      expect(fields(requestProblems(v).map((p) => p.path))).toEqual(['(value)']);
  });

  const iface = fc.record(
    {
      name: maybe(fc.constant('eth0')),
      mac: maybe(fc.constant('02:00:00:00:00:01')),
      mtu: maybe(fc.integer({ min: 0, max: 9000 }), fc.constant(1.5)),
      sandbox: maybe(fc.constant('/run/netns/a')),
      socketPath: anything,
    },
    { requiredKeys: ['name'] },
  );
  const ip = fc.record(
    {
      address: maybe(fc.constant('2001:db8::5/128')),
      gateway: maybe(fc.constant('fe80::1')),
      interface: maybe(fc.integer({ min: -1, max: 3 })),
      version: anything,
    },
    { requiredKeys: ['address'] },
  );
  const route = fc.record(
    { dst: maybe(fc.constant('::/0')), gw: maybe(fc.constant('fe80::1')), mtu: anything },
    { requiredKeys: ['dst'] },
  );
  const result = fc.record(
    {
      cniVersion: maybe(fc.constant('1.1.0')),
      interfaces: maybe(fc.array(maybe(iface), { maxLength: 2 })),
      ips: maybe(fc.array(maybe(ip), { maxLength: 2 })),
      routes: maybe(fc.array(maybe(route), { maxLength: 2 })),
      dns: maybe(fc.constant({ nameservers: ['2001:db8::53'] })),
      extra: anything,
    },
    { requiredKeys: ['cniVersion'] },
  );
  const reply = fc.oneof(
    fc.record(
      { ok: fc.constant(true), result: maybe(result), extra: anything },
      { requiredKeys: ['ok'] },
    ),
    fc.record(
      {
        ok: maybe(fc.constant(false)),
        error: maybe(
          fc.record(
            {
              code: maybe(fc.integer({ min: -1, max: 200 }), fc.constant(2.5)),
              msg: maybe(fc.constant('no')),
              details: maybe(fc.constant('why')),
              extra: anything,
            },
            { requiredKeys: ['code', 'msg'] },
          ),
        ),
      },
      { requiredKeys: [] },
    ),
    anything,
  );

  it('parseReply accepts exactly what AgentResponse accepts, and returns the same value', () => {
    fc.assert(
      fc.property(reply, (r) => {
        const zod = AgentResponse.safeParse(r);
        const hand = parseReply(r);
        if (zod.success) expect(hand).toEqual({ response: zod.data });
        else {
          expect('problems' in hand).toBe(true);
          if ('problems' in hand)
            expect(fields(hand.problems.map((p) => p.path))).toEqual(
              fields(zod.error.issues.map((i) => i.path)),
            );
        }
      }),
      { numRuns: RUNS },
    );
  });
});
