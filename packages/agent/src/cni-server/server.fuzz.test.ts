// Bad input, agent socket: random bytes, malformed and truncated JSON, oversize payloads and
// schema-violating requests sent to the real CNI socket server (temp unix socket) in front of
// the real handlers (FakeDatapath, real allocator, store in memory). Every refusal is a CNI
// error with the spec code and a message; a refused request reaches no handler, allocates
// nothing and changes no kernel state; the server keeps serving valid requests throughout.
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AGENT_COMMANDS,
  AgentResponse,
  CniErrorCode,
  parseAgentRequest,
  silentLogger,
  type AgentRequest,
} from '@flock/api';
import { nodeConfig as buildNodeConfig } from '@flock/api/testing';
import type { FileSystem } from '@flock/exec';
import { AddressAllocator } from '@flock/ipam';
import { AllocationStore } from '../store/index.js';
import type { Pod } from '@flock/api';
import { CniHandlers } from '../cni/handlers.js';
import { FakeDatapath } from '../../testing/datapath/fake.js';
import { startCniServer, type CniServer } from './server.js';
import { rawExchange, tempSocketPath } from '../../testing/cni-server.js';
import { testClaims } from '../../testing/claims.js';

const RUNS = process.env['FLOCK_SOAK'] === '1' ? 100_000 : 10_000;
const TIMEOUT = process.env['FLOCK_SOAK'] === '1' ? 3_600_000 : 300_000;
const MAX_BYTES = 8 * 1024;

const nodeConfig = buildNodeConfig();

function memoryFileSystem(): FileSystem {
  const files = new Map<string, string>();
  const enoent = (p: string) => Object.assign(new Error(`ENOENT: ${p}`), { code: 'ENOENT' });
  return {
    readFile: async (p) => files.get(p) ?? Promise.reject(enoent(p)),
    create: async (p) => ({
      writeFile: async (d) => void files.set(p, d),
      sync: async () => {},
      close: async () => {},
    }),
    rename: async (from, to) => {
      files.set(to, files.get(from) ?? '');
      files.delete(from);
    },
    unlink: async (p) => void files.delete(p),
    mkdir: async () => {},
    syncDirectory: async () => {},
  };
}

const hostile = fc.constantFrom(
  '$(reboot)',
  '`id`',
  '../../etc/shadow',
  '/run/netns/../../proc/1/ns/net',
  'eth0;ip link del eth0',
  'a\nb',
  'a\0b',
  'x'.repeat(300),
  '-rf',
  '',
);
const mutate = <T>(good: fc.Arbitrary<T>) =>
  fc.oneof(
    { weight: 10, arbitrary: good },
    { weight: 2, arbitrary: hostile },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 1 }) },
  );
const config = fc.record(
  {
    cniVersion: mutate(fc.constant('1.1.0')),
    name: mutate(fc.constant('flock')),
    type: mutate(fc.constant('flock')),
    socketPath: mutate(fc.constant('/run/flock/cni.sock')),
    timeoutMs: mutate(fc.integer({ min: 100, max: 600_000 })),
    'cni.dev/valid-attachments': mutate(
      fc.array(fc.record({ containerID: fc.constant('gone'), ifname: fc.constant('eth0') })),
    ),
  },
  { requiredKeys: ['cniVersion', 'name', 'type'] },
);
const request = fc.record(
  {
    command: mutate(fc.constantFrom(...AGENT_COMMANDS)),
    containerID: mutate(fc.stringMatching(/^[a-f0-9]{8,16}$/)),
    netns: mutate(fc.constant('/var/run/netns/fuzz')),
    ifName: mutate(fc.constant('eth0')),
    // Pods the API server does not have: a valid ADD is answered "unknown container" (3).
    args: mutate(
      fc.record({ K8S_POD_NAMESPACE: fc.constant('default'), K8S_POD_NAME: fc.string() }),
    ),
    config: mutate(config),
    extra: fc.jsonValue({ maxDepth: 1 }),
  },
  { requiredKeys: ['command', 'config'] },
);
/** What arrives on the socket: requests as JSON, damaged JSON, or bytes of any kind. */
const payload: fc.Arbitrary<string | Buffer> = fc.oneof(
  { weight: 8, arbitrary: request.map((r) => JSON.stringify(r)) },
  { weight: 1, arbitrary: request.map((r) => JSON.stringify(r).slice(0, -3)) },
  { weight: 1, arbitrary: fc.jsonValue().map((j) => JSON.stringify(j) ?? 'null') },
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b)) },
  {
    weight: 1,
    arbitrary: fc
      .integer({ min: MAX_BYTES + 1, max: 4 * MAX_BYTES })
      .map((n) => `{"command":"ADD","pad":"${'x'.repeat(n)}"}`),
  },
);

/** How the server must judge a payload: its own size limit, JSON, then the request schema. */
function verdict(p: string | Buffer): 'too-large' | 'not-json' | 'invalid' | 'valid' {
  const bytes = typeof p === 'string' ? Buffer.from(p) : p;
  if (bytes.length > MAX_BYTES) return 'too-large';
  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch {
    return 'not-json';
  }
  return parseAgentRequest(json).success ? 'valid' : 'invalid';
}
const CODE = {
  'too-large': [CniErrorCode.IoFailure],
  'not-json': [CniErrorCode.DecodeFailure],
  invalid: [
    CniErrorCode.InvalidEnvironment,
    CniErrorCode.DecodeFailure,
    CniErrorCode.InvalidNetworkConfig,
  ],
} as const;

let tmp: Awaited<ReturnType<typeof tempSocketPath>>;
let server: CniServer;
let datapath: FakeDatapath;
let store: AllocationStore;
let allocator: AddressAllocator;
const handled: AgentRequest[] = [];
const pods = new Map<string, Pod>();

beforeAll(async () => {
  tmp = await tempSocketPath();
  datapath = new FakeDatapath();
  datapath.createNetns('/var/run/netns/fuzz');
  store = new AllocationStore('/state/allocations.json', { fileSystem: memoryFileSystem() });
  await store.load();
  const alloc = AddressAllocator.create({ cidr6: nodeConfig.spec.cidr6 });
  if (!alloc.ok) throw new Error(alloc.error);
  allocator = alloc.value;
  const handlers = new CniHandlers({
    store,
    datapath,
    claims: testClaims(),
    node: () => ({ nodeConfig, allocator }),
    pods: { get: async (ns, name) => pods.get(`${ns}/${name}`) },
    logger: silentLogger,
  });
  server = await startCniServer({
    socketPath: tmp.socketPath,
    maxRequestBytes: MAX_BYTES,
    handle: (r) => {
      handled.push(r);
      return handlers.handle(r);
    },
  });
});
afterAll(async () => {
  await server?.close();
  await tmp?.cleanup();
});

const send = async (p: string | Buffer) =>
  AgentResponse.parse(JSON.parse(await rawExchange(tmp.socketPath, p, { timeoutMs: 10_000 })));

describe('CNI socket server: fuzzed requests', () => {
  it(
    `refuses bad requests with a clear error, touching nothing, and keeps serving (${RUNS} cases)`,
    async () => {
      const tally = { 'too-large': 0, 'not-json': 0, invalid: 0, valid: 0 };
      const writes = datapath.writes;
      await fc.assert(
        fc.asyncProperty(payload, async (p) => {
          const expected = verdict(p);
          tally[expected]++;
          const before = handled.length;
          const reply = await send(p);
          if (expected === 'valid') {
            // Reaches the handlers once; a pod the API server lacks is refused there (3).
            expect(handled.length).toBe(before + 1);
            if (!reply.ok)
              expect([CniErrorCode.UnknownContainer, CniErrorCode.InvalidEnvironment]).toContain(
                reply.error.code,
              );
          } else {
            expect(reply.ok).toBe(false);
            if (reply.ok) return;
            expect(CODE[expected] as readonly number[]).toContain(reply.error.code);
            expect(reply.error.msg.length).toBeGreaterThan(10);
            expect(handled.length, 'a refused request reached the handlers').toBe(before);
          }
          // Nothing allocated, stored or wired for any of them (no pod exists to add).
          expect(store.entries()).toEqual([]);
          expect(allocator.allocations()).toEqual([]);
          expect(datapath.hostVethNames()).toEqual([]);
        }),
        { numRuns: RUNS },
      );
      expect(datapath.writes - writes).toBe(0);
      for (const k of Object.keys(tally) as (keyof typeof tally)[])
        expect(tally[k], JSON.stringify(tally)).toBeGreaterThan(RUNS / 50);

      // Still serving: a real ADD for a pod that exists goes all the way through.
      pods.set('default/web', { metadata: { namespace: 'default', name: 'web', uid: 'uid-web' } });
      const add = await send(
        JSON.stringify({
          command: 'ADD',
          containerID: 'c0ffee',
          netns: '/var/run/netns/fuzz',
          ifName: 'eth0',
          args: { K8S_POD_NAMESPACE: 'default', K8S_POD_NAME: 'web' },
          config: { cniVersion: '1.1.0', name: 'flock', type: 'flock' },
        }),
      );
      expect(add.ok && add.result?.ips?.[0]?.address).toMatch(/^2001:db8:100:.*\/128$/);
      expect(store.entries()).toHaveLength(1);
    },
    TIMEOUT,
  );
});
