// Bad input, CNI side: arbitrary and mutated CNI_* environments and stdin through runPlugin
// (the whole invocation but the process). Every run ends in a spec error object with a known
// code and a message, or in a valid result; nothing throws; the agent is asked only with a
// request its own schema accepts, and never when the plugin refused the input.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  AGENT_COMMANDS,
  CNI_COMMANDS,
  CNI_VERSIONS,
  CniErrorCode,
  CniResult,
  parseAgentRequest,
  type AgentRequest,
  type AgentResponse,
} from '@flock/api';
import type { CallAgent } from './agent-client.js';
import { runPlugin, type PluginOutput } from './plugin.js';

/** 10,000 by default (npm test), 100,000 with FLOCK_SOAK=1. */
const RUNS = process.env['FLOCK_SOAK'] === '1' ? 100_000 : 10_000;
const TIMEOUT = process.env['FLOCK_SOAK'] === '1' ? 600_000 : 120_000;

/** Shell metacharacters, path tricks, control characters, oversize: what a hostile caller sends. */
const hostile = fc.oneof(
  fc.constantFrom(
    'eth0;reboot',
    '$(id)',
    '`id`',
    '../../etc/passwd',
    '/run/netns/../../proc/1/ns/net',
    'a\0b',
    'eth0\n',
    'x y',
    '"\'',
    '-rf',
    '--help',
    '/run/netns/x|cat',
    'K8S_POD_NAME=a;;=b',
    '\u202e',
    '%s%n',
  ),
  fc.string({ minLength: 200, maxLength: 5000, unit: 'binary' }),
  fc.string({ maxLength: 40, unit: 'binary' }),
  fc.string({ maxLength: 20 }),
);
const maybe = <T>(good: fc.Arbitrary<T>) =>
  fc.oneof(
    { weight: 12, arbitrary: good },
    { weight: 2, arbitrary: hostile },
    { weight: 1, arbitrary: fc.constantFrom(undefined, '') },
  );

const env = fc.record(
  {
    CNI_COMMAND: fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom(...CNI_COMMANDS) },
      { weight: 1, arbitrary: fc.constantFrom('add', 'ADD ', 'VERSIONS', '') },
      { weight: 1, arbitrary: hostile },
    ),
    CNI_CONTAINERID: maybe(fc.stringMatching(/^[a-f0-9]{1,64}$/)),
    CNI_NETNS: maybe(fc.constantFrom('/run/netns/cni-1', '/proc/42/ns/net', '/var/run/netns/x')),
    CNI_IFNAME: maybe(fc.constantFrom('eth0', 'net1', 'a'.repeat(15))),
    CNI_ARGS: maybe(
      fc.constantFrom(
        'K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0',
        'IgnoreUnknown=1;K8S_POD_NAMESPACE=a;K8S_POD_NAME=b;K8S_POD_UID=u',
        `K=${'v'.repeat(1025)}`,
      ),
    ),
    CNI_PATH: maybe(fc.constant('/opt/cni/bin')),
  },
  { requiredKeys: ['CNI_COMMAND', 'CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME'] },
);

/** Any JSON value, including nested hostile strings. */
const junk = fc.oneof(hostile, fc.jsonValue({ maxDepth: 2 }));
const version = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...CNI_VERSIONS) },
  { weight: 1, arbitrary: fc.constantFrom('0.3.1', '2.0.0', '1.1', '') },
  { weight: 1, arbitrary: junk },
);
const conf = fc.record(
  {
    cniVersion: version,
    name: fc.oneof({ weight: 4, arbitrary: fc.constant('flock') }, junk),
    type: fc.oneof({ weight: 4, arbitrary: fc.constant('flock') }, junk),
    socketPath: fc.oneof({ weight: 6, arbitrary: fc.constant('/run/flock/cni.sock') }, junk),
    timeoutMs: fc.oneof({ weight: 6, arbitrary: fc.integer({ min: 100, max: 600_000 }) }, junk),
    prevResult: fc.oneof(
      {
        weight: 4,
        arbitrary: fc.constant({
          cniVersion: '0.4.0',
          ips: [{ version: '6', address: '2001:db8::5/128' }],
        }),
      },
      junk,
    ),
    'cni.dev/valid-attachments': fc.oneof(
      {
        weight: 4,
        arbitrary: fc.array(fc.record({ containerID: fc.string(), ifname: fc.constant('eth0') })),
      },
      junk,
    ),
    ipam: junk,
  },
  // Half the configurations have the fields a valid one needs; the rest may miss any.
  { requiredKeys: [] },
);
const fullConf = fc.record(
  {
    cniVersion: version,
    name: fc.oneof({ weight: 8, arbitrary: fc.constant('flock') }, junk),
    type: fc.oneof({ weight: 8, arbitrary: fc.constant('flock') }, junk),
  },
  { requiredKeys: ['cniVersion', 'name', 'type'] },
);
const stdin: fc.Arbitrary<string | Error> = fc.oneof(
  { weight: 3, arbitrary: conf.map((c) => JSON.stringify(c)) },
  {
    weight: 6,
    arbitrary: fc.tuple(conf, fullConf).map(([c, f]) => JSON.stringify({ ...c, ...f })),
  },
  { weight: 1, arbitrary: conf.map((c) => JSON.stringify(c).slice(0, -1)) }, // truncated
  { weight: 1, arbitrary: junk.map((j) => JSON.stringify(j) ?? '') },
  { weight: 1, arbitrary: fc.string({ maxLength: 100, unit: 'binary' }) },
  { weight: 1, arbitrary: fc.constant(new Error('EIO: i/o error, read')) },
);

const ADD_RESULT = { cniVersion: '1.1.0', ips: [{ address: '2001:db8::5/128' }] };
const SPEC_CODES = new Set<number>(Object.values(CniErrorCode));
/** Codes the plugin answers without asking the agent: what it refuses is the caller's input. */
const REFUSAL_CODES = new Set<number>([
  CniErrorCode.IncompatibleVersion,
  CniErrorCode.InvalidEnvironment,
  CniErrorCode.IoFailure,
  CniErrorCode.DecodeFailure,
  CniErrorCode.InvalidNetworkConfig,
]);

function fakeAgent(answer: (r: AgentRequest) => AgentResponse) {
  const calls: AgentRequest[] = [];
  const call: CallAgent = async (request) => {
    calls.push(request);
    return answer(request);
  };
  return { call, calls };
}

/** The output is one of the spec's answers: an error object, a result, a version reply or nothing. */
function checkOutput(
  command: unknown,
  out: PluginOutput,
  input = '',
): Record<string, unknown> | undefined {
  expect([0, 1]).toContain(out.exitCode);
  if (out.stdout === '') {
    expect(out.exitCode).toBe(0);
    return undefined;
  }
  expect(out.stdout.endsWith('\n')).toBe(true);
  const body = JSON.parse(out.stdout) as Record<string, unknown>;
  expect(typeof body['cniVersion']).toBe('string');
  if (out.exitCode === 1) {
    expect(SPEC_CODES.has(body['code'] as number), `code ${String(body['code'])}`).toBe(true);
    expect(body['code']).not.toBe(CniErrorCode.Internal); // an internal error is a crash
    expect(typeof body['msg']).toBe('string');
    expect((body['msg'] as string).length).toBeGreaterThan(10);
    // Words of a program error, unless the caller's own input put them there.
    for (const word of ['undefined', '[object Object]', 'NaN'])
      if (!input.includes(word)) expect(body['msg']).not.toContain(word);
    if ('details' in body) expect(typeof body['details']).toBe('string');
  } else if (command === 'VERSION') {
    expect(body['supportedVersions']).toEqual([...CNI_VERSIONS]);
  } else {
    expect(command).toBe('ADD');
    expect(CniResult.safeParse(body).success).toBe(true);
  }
  return body;
}

describe('CNI plugin: fuzzed environment and stdin', () => {
  it(
    `answers every invocation with a spec error or a valid result (${RUNS} cases)`,
    async () => {
      let refused = 0;
      let forwarded = 0;
      await fc.assert(
        fc.asyncProperty(env, stdin, async (e, input) => {
          const agent = fakeAgent((r) =>
            r.command === 'ADD' ? { ok: true, result: ADD_RESULT } : { ok: true },
          );
          const out = await runPlugin({ env: e, stdin: input }, agent.call);
          const body = checkOutput(e.CNI_COMMAND, out, JSON.stringify([e, String(input)]));
          expect(agent.calls.length).toBeLessThanOrEqual(1);
          const [sent] = agent.calls;
          if (sent) {
            forwarded++;
            // What reaches the agent passes the agent's own schema, as the runtime gave it.
            expect(parseAgentRequest(sent).success).toBe(true);
            expect(sent.command).toBe(e.CNI_COMMAND);
            if (sent.containerID !== undefined) expect(sent.containerID).toBe(e.CNI_CONTAINERID);
            if (sent.ifName !== undefined) expect(sent.ifName).toBe(e.CNI_IFNAME);
            if (sent.netns !== undefined) expect(sent.netns).toBe(e.CNI_NETNS);
            expect(out.exitCode).toBe(0);
          } else if (out.exitCode === 1) {
            refused++;
            expect(REFUSAL_CODES.has(body?.['code'] as number)).toBe(true);
          } else {
            expect(e.CNI_COMMAND).toBe('VERSION');
          }
        }),
        { numRuns: RUNS },
      );
      // The mix reaches both sides: most runs are refused, a fair share is forwarded.
      expect(refused).toBeGreaterThan(RUNS / 10);
      expect(forwarded).toBeGreaterThan(RUNS / 50);
    },
    TIMEOUT,
  );

  it(
    `forwards every well-formed invocation (${RUNS / 10} cases)`,
    async () => {
      const good = fc.record({
        command: fc.constantFrom(...AGENT_COMMANDS),
        id: fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/),
        ifName: fc.stringMatching(/^[A-Za-z0-9_-]{1,15}$/),
        netns: fc.stringMatching(/^\/[A-Za-z0-9_-]{1,20}(\/[A-Za-z0-9_-]{1,20}){0,3}$/),
      });
      await fc.assert(
        fc.asyncProperty(good, async (g) => {
          const agent = fakeAgent((r) =>
            r.command === 'ADD' ? { ok: true, result: ADD_RESULT } : { ok: true },
          );
          const out = await runPlugin(
            {
              env: {
                CNI_COMMAND: g.command,
                CNI_CONTAINERID: g.id,
                CNI_IFNAME: g.ifName,
                CNI_NETNS: g.netns,
                CNI_ARGS: 'K8S_POD_NAMESPACE=default;K8S_POD_NAME=web-0',
              },
              stdin: JSON.stringify({ cniVersion: '1.1.0', name: 'flock', type: 'flock' }),
            },
            agent.call,
          );
          checkOutput(g.command, out);
          expect(out.exitCode).toBe(0);
          expect(agent.calls).toHaveLength(1);
        }),
        { numRuns: RUNS / 10 },
      );
    },
    TIMEOUT,
  );

  it(
    `reports an agent's error reply as it is, never as a crash (${RUNS / 10} cases)`,
    async () => {
      const error = fc.record({
        code: fc.integer({ min: 1, max: 1000 }),
        msg: fc.string({ minLength: 1, maxLength: 50 }),
      });
      await fc.assert(
        fc.asyncProperty(error, fc.constantFrom(...AGENT_COMMANDS), async (err, command) => {
          const agent = fakeAgent(() => ({ ok: false, error: err }));
          const out = await runPlugin(
            {
              env: {
                CNI_COMMAND: command,
                CNI_CONTAINERID: 'c0ffee',
                CNI_IFNAME: 'eth0',
                CNI_NETNS: '/run/netns/x',
              },
              stdin: JSON.stringify({ cniVersion: '1.1.0', name: 'flock', type: 'flock' }),
            },
            agent.call,
          );
          expect(out.exitCode).toBe(1);
          expect(JSON.parse(out.stdout)).toEqual({ cniVersion: '1.1.0', ...err });
        }),
        { numRuns: RUNS / 10 },
      );
    },
    TIMEOUT,
  );
});
