// Bad input, the agent's side of pod annotations: ADD with fuzzed ip-algo, pinned-ip and
// anycast annotations through the real handlers (FakeDatapath, the real allocator and store on
// an in-memory file system). Each ADD is refused with a NotAllowed/Exhausted error naming what
// is wrong and leaves nothing behind (no entry, no held address, no veth), or it succeeds with
// exactly the pinned and anycast addresses asked for, and DEL then removes every trace.
import fc from 'fast-check';
import { Address4, Address6 } from 'ip-address';
import { describe, expect, it } from 'vitest';
import {
  ANYCAST_ANNOTATION,
  CniErrorCode,
  IP_ALGO_ANNOTATION,
  PINNED_IP_ANNOTATION,
  parseAnycast,
  parsePinnedIp,
  silentLogger,
  type AgentRequest,
} from '@flock/api';
import { nodeConfig as buildNodeConfig, pod } from '@flock/api/testing';
import type { FileSystem } from '@flock/exec';
import { AddressAllocator, canonicalAddress } from '@flock/ipam';
import { AllocationStore } from '../store/index.js';
import type { Pod } from '@flock/api';
import { FakeDatapath } from '../../testing/datapath/fake.js';
import { CniHandlers } from './handlers.js';
import { testClaims } from '../../testing/claims.js';

const RUNS = process.env['FLOCK_SOAK'] === '1' ? 100_000 : 10_000;
const TIMEOUT = process.env['FLOCK_SOAK'] === '1' ? 1_800_000 : 180_000;

const PINNED = ['2001:db8:200::/64', '198.51.100.0/28'];
const ANYCAST = ['2001:db8:300::/120', '203.0.113.0/28'];
const nodeConfig = buildNodeConfig({
  spec: {
    cidr4: '192.0.2.16/28',
    pinnedCIDRs: PINNED,
    anycastCIDRs: ANYCAST,
    // Every namespace may claim: these properties are about the annotations' grammar.
    pinnedGrants: [{ anyNamespace: true }],
    anycastGrants: [{ anyNamespace: true }],
  },
});

/** A file system in memory: the store's writes cost nothing, so 10,000 ADDs stay fast. */
function memoryFileSystem(): FileSystem {
  const files = new Map<string, string>();
  const enoent = (p: string) => Object.assign(new Error(`ENOENT: ${p}`), { code: 'ENOENT' });
  return {
    readFile: async (p) => files.get(p) ?? Promise.reject(enoent(p)),
    create: async (p) => {
      files.set(p, '');
      return {
        writeFile: async (d) => void files.set(p, d),
        sync: async () => {},
        close: async () => {},
      };
    },
    rename: async (from, to) => {
      const d = files.get(from);
      if (d === undefined) throw enoent(from);
      files.set(to, d);
      files.delete(from);
    },
    unlink: async (p) => void files.delete(p),
    mkdir: async () => {},
    syncDirectory: async () => {},
  };
}

/** Addresses inside a range, outside every range, or in another spelling. */
const inside6 = (prefix: string, bits: number) =>
  fc.bigInt({ min: 1n, max: 2n ** BigInt(bits) - 2n }).map((n) => {
    const base = new Address6(prefix).bigInt();
    return Address6.fromBigInt(base + n).correctForm();
  });
const inside4 = (base: string, size: number) =>
  fc.integer({ min: 1, max: size - 2 }).map((n) => {
    const b = new Address4(base).bigInt();
    return Address4.fromBigInt(b + BigInt(n)).correctForm();
  });
const respell = (a: fc.Arbitrary<string>) =>
  fc.oneof(
    { weight: 3, arbitrary: a },
    {
      weight: 1,
      arbitrary: a.map((x) =>
        x.includes(':') ? new Address6(x).canonicalForm().toUpperCase() : x,
      ),
    },
  );
const junk = fc.oneof(
  fc.string({ maxLength: 15 }),
  fc.constantFrom('$(id)', '2001:db8:300::1/128', 'fe80::1%eth0', '::1', '127.0.0.1', '0.0.0.0'),
);
const addr6 = (range: string) =>
  respell(
    fc.oneof(
      { weight: 6, arbitrary: inside6(range, range.startsWith('2001:db8:3') ? 8 : 64) },
      { weight: 1, arbitrary: fc.ipV6() },
    ),
  );
const pinnedValue = fc
  .oneof(
    fc.tuple(addr6('2001:db8:200::'), fc.option(inside4('198.51.100.0', 16), { nil: undefined })),
    fc.tuple(
      fc.option(addr6('2001:db8:200::'), { nil: undefined }),
      fc.oneof(inside4('198.51.100.0', 16), fc.ipV4()),
    ),
  )
  .map(([a, b]) => [a, b].filter((x) => x !== undefined).join(', '));
const anycastValue = fc
  .array(
    fc.oneof(
      { weight: 4, arbitrary: addr6('2001:db8:300::') },
      { weight: 2, arbitrary: inside4('203.0.113.0', 16) },
      { weight: 1, arbitrary: fc.ipV4() },
      { weight: 1, arbitrary: junk },
    ),
    // Mostly short lists (each item may spoil it); sometimes more than the 16 allowed.
    { minLength: 1, maxLength: 3 },
  )
  .chain((l) =>
    fc.oneof(
      { weight: 9, arbitrary: fc.constant(l) },
      { weight: 1, arbitrary: fc.array(addr6('2001:db8:300::'), { minLength: 15, maxLength: 18 }) },
    ),
  )
  .map((l) => l.join(','));
const annotations = fc.record(
  {
    [IP_ALGO_ANNOTATION]: fc.oneof(
      fc.constantFrom('random', 'sequential', 'stable', ' stable '),
      junk,
    ),
    [PINNED_IP_ANNOTATION]: fc.oneof({ weight: 4, arbitrary: pinnedValue }, junk),
    [ANYCAST_ANNOTATION]: fc.oneof({ weight: 4, arbitrary: anycastValue }, junk),
  },
  { requiredKeys: [] },
);

const inRanges = (ip: string, ranges: string[]) =>
  ranges.some((r) =>
    ip.includes(':') === r.includes(':')
      ? ip.includes(':')
        ? new Address6(ip).isInSubnet(new Address6(r))
        : new Address4(ip).isInSubnet(new Address4(r))
      : false,
  );

async function freshAgent() {
  const store = new AllocationStore('/state/allocations.json', { fileSystem: memoryFileSystem() });
  await store.load();
  const datapath = new FakeDatapath();
  const alloc = AddressAllocator.create({
    cidr6: nodeConfig.spec.cidr6,
    cidr4: nodeConfig.spec.cidr4!,
    pinnedCIDRs: PINNED,
  });
  if (!alloc.ok) throw new Error(alloc.error);
  const node = { nodeConfig, allocator: alloc.value };
  const pods = new Map<string, Pod>();
  const warnings: string[] = [];
  const handlers = new CniHandlers({
    store,
    datapath,
    claims: testClaims(),
    node: () => node,
    pods: { get: async (ns, name) => pods.get(`${ns}/${name}`) },
    logger: silentLogger,
    warn: (_pod, reason, message) => warnings.push(`${reason}: ${message}`),
  });
  const request = (command: 'ADD' | 'DEL', id: string, name: string): AgentRequest => ({
    command,
    containerID: id,
    ifName: 'eth0',
    netns: datapath.createNetns(`/var/run/netns/${id}`),
    args: { K8S_POD_NAMESPACE: 'default', K8S_POD_NAME: name },
    config: { cniVersion: '1.1.0', name: 'flock', type: 'flock' },
  });
  const addPod = (name: string, a: Record<string, string>) =>
    pods.set(`default/${name}`, pod({ name, annotations: a }));
  return { store, datapath, node, handlers, warnings, request, addPod };
}

describe('agent: ADD with fuzzed address annotations', () => {
  it(
    `refuses with a clear error and nothing left, or allocates exactly what was asked (${RUNS} cases)`,
    async () => {
      const tally = { ok: 0, refused: 0 };
      await fc.assert(
        fc.asyncProperty(annotations, async (a) => {
          const agent = await freshAgent();
          agent.addPod('web', a);
          const r = await agent.handlers.handle(agent.request('ADD', 'c1', 'web'));
          const pinned = parsePinnedIp(a[PINNED_IP_ANNOTATION]);
          const anycast = parseAnycast(a[ANYCAST_ANNOTATION]);
          const pinnedList = pinned?.ok ? [pinned.value.ipv6, pinned.value.ipv4] : [];
          const allowed =
            pinned?.ok !== false &&
            anycast?.ok !== false &&
            pinnedList.every((ip) => ip === undefined || inRanges(ip, PINNED)) &&
            (anycast?.ok ? anycast.value : []).every((ip) => inRanges(ip, ANYCAST));
          if (!r.ok) {
            tally.refused++;
            expect(allowed, `refused a good request: ${r.error.msg}`).toBe(false);
            expect([CniErrorCode.NotAllowed, CniErrorCode.Exhausted]).toContain(r.error.code);
            expect(r.error.msg).toMatch(/pinned|anycast/);
            if (pinned?.ok === false) expect(r.error.msg).toContain(PINNED_IP_ANNOTATION);
            else if (anycast?.ok === false) expect(r.error.msg).toContain(ANYCAST_ANNOTATION);
            expect(agent.warnings).toHaveLength(1); // the pod's owner is told, once
            expect(agent.store.entries()).toEqual([]);
            expect(agent.node.allocator.allocations()).toEqual([]);
            expect(agent.datapath.hostVethNames()).toEqual([]);
            return;
          }
          tally.ok++;
          expect(allowed, 'accepted a request it should refuse').toBe(true);
          const [entry] = agent.store.entries();
          expect(entry?.state).toBe('committed');
          if (pinned?.ok && pinned.value.ipv6)
            expect(entry?.ip6).toBe(canonicalAddress(pinned.value.ipv6));
          if (pinned?.ok && pinned.value.ipv4)
            expect(entry?.ip4).toBe(canonicalAddress(pinned.value.ipv4));
          const wanted = anycast?.ok ? anycast.value.map((x) => canonicalAddress(x)) : [];
          expect([...(entry?.anycast ?? [])].sort()).toEqual([...wanted].sort());
          expect(agent.datapath.hostVethNames()).toHaveLength(1);

          const del = await agent.handlers.handle(agent.request('DEL', 'c1', 'web'));
          expect(del).toEqual({ ok: true });
          expect(agent.store.entries()).toEqual([]);
          expect(agent.node.allocator.allocations()).toEqual([]);
          expect(agent.datapath.hostVethNames()).toEqual([]);
        }),
        { numRuns: RUNS },
      );
      expect(tally.ok).toBeGreaterThan(RUNS / 10);
      expect(tally.refused).toBeGreaterThan(RUNS / 10);
    },
    TIMEOUT,
  );

  it(
    `never gives one pod's pinned address to another, however it is written (${RUNS / 10} cases)`,
    async () => {
      await fc.assert(
        fc.asyncProperty(addr6('2001:db8:200::'), fc.boolean(), async (ip, upper) => {
          const agent = await freshAgent();
          agent.addPod('a', { [PINNED_IP_ANNOTATION]: ip });
          const other = upper ? new Address6(ip).canonicalForm().toUpperCase() : ip;
          agent.addPod('b', { [PINNED_IP_ANNOTATION]: other });
          const first = await agent.handlers.handle(agent.request('ADD', 'c1', 'a'));
          const second = await agent.handlers.handle(agent.request('ADD', 'c2', 'b'));
          if (!inRanges(ip, PINNED)) {
            expect(first.ok).toBe(false);
            return;
          }
          expect(first.ok).toBe(true);
          expect(second).toMatchObject({ ok: false, error: { code: CniErrorCode.NotAllowed } });
          expect(agent.store.entries().map((e) => e.containerID)).toEqual(['c1']);
          expect(agent.datapath.hostVethNames()).toHaveLength(1);
        }),
        { numRuns: RUNS / 10 },
      );
    },
    TIMEOUT,
  );
});
