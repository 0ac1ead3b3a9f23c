// Faults between the agent and the API server, for real: the API server (and etcd) restarted,
// the agent's watches made silent (its open connection kept open with nothing flowing), and
// the node's NodeConfig deleted and re-created. In each, the agent keeps serving the ADDs and DELs
// it can serve, answers the others with a CNI error that says why, and converges once the fault
// is over; each scenario prints its time to converge and asserts a bound.
import { CniErrorCode } from '@flock/api';
import { NODECONFIGS, NODES, objectPath } from '@flock/kube';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultNode, recordFigure, repeat, sleep, timeTo } from '../fault-node.js';

const NODE = 'node-f';
// Short periods so that a test run sees several of each; --watchdog is the one under test.
const WATCHDOG_MS = 10_000;
let f: FaultNode;

beforeAll(async () => {
  f = await FaultNode.start({
    nodeName: NODE,
    // Sequential addresses: an address handed out twice shows up as the same address.
    annotations: { 'flock.fritzlab.net/ip-algo': 'sequential' },
    spec: { cidr4: '192.0.2.0/24' },
    agentArgs: [
      ...['--watchdog', `${WATCHDOG_MS}ms`, '--sweep-period', '3s', '--orphan-grace', '1s'],
      ...['--bgp-status-period', '1s', '--address-quarantine', '1s'],
    ],
  });
}, 300_000);

afterAll(async () => {
  await f?.destroy();
});

/** Committed addresses in the store: each held by exactly one container. */
async function assertNoDuplicates(): Promise<void> {
  const ips = (await f.storeEntries()).filter((e) => e.state === 'committed').map((e) => e.ip6);
  expect(new Set(ips).size, `addresses in the store: ${ips.join(', ')}`).toBe(ips.length);
}

/** NodeConfig status counts what the store holds. */
async function statusCountsStore(): Promise<boolean> {
  const committed = (await f.storeEntries()).filter((e) => e.state === 'committed').length;
  return (await f.nodeConfig())?.status?.allocations?.ipv6 === committed;
}

async function apiDown(): Promise<boolean> {
  try {
    await f.api.request({ method: 'GET', path: '/api/v1/namespaces/default' });
    return false;
  } catch {
    return true;
  }
}

describe('faults between the agent and the API server', () => {
  it('API server restarted: ADD from the pod cache and DEL go on, the rest is code 11; converges after', async () => {
    const RESTARTS = repeat(1);
    const converge: number[] = [];
    const codes = new Set<number>();
    const downFor: number[] = [];
    for (let i = 0; i < RESTARTS; i++) {
      const old = await f.createPod(`old-${i}`);
      await f.add(old);
      const doomed = await f.createPod(`doomed-${i}`);
      await f.add(doomed);
      const cached = await f.createPod(`cached-${i}`);
      const ghost = await f.bareNetns(`ghost-${i}`);
      await sleep(1_000); // the pod cache has seen cached-i (a watch event away)

      const restart = f.cp.restart();
      await timeTo('the API server down', apiDown, 60_000);
      const down = Date.now();
      // The API server is gone: what the agent knows locally still works.
      expect((await f.add(cached)).length).toBe(2);
      await f.del(old);
      await f.node.cnitool('status', cached.ns.path);
      // A pod the agent never saw cannot be looked up: try again later, not "unknown pod".
      const refused = await f.cniError('ADD', ghost);
      expect(refused.code, refused.msg).toBe(CniErrorCode.TryAgainLater);
      expect(refused.msg).toMatch(/API server/);
      codes.add(refused.code);
      await restart;

      const up = Date.now();
      downFor.push(up - down);
      // Someone else (a node controller) flips the Node condition, and a pod goes away without
      // a CNI DEL: both only reach the agent through its watches and writes.
      await f.forceDelete(doomed.name);
      await f.api.request({
        method: 'PATCH',
        path: objectPath(NODES, NODE, undefined, 'status'),
        contentType: 'application/strategic-merge-patch+json',
        body: {
          status: {
            conditions: [{ type: 'NetworkUnavailable', status: 'True', reason: 'NodeRestarted' }],
          },
        },
      });
      converge.push(
        await timeTo(
          'the agent converged after the restart',
          async () =>
            !(await f.storeEntries()).some((e) => e.pod === doomed.name) &&
            (await statusCountsStore()) &&
            (await f.networkUnavailable())?.reason === 'FlockReady',
          90_000,
          up,
        ),
      );
      await assertNoDuplicates();
    }
    expect(
      f.logged('watch connection failed').length + f.logged('list failed').length,
    ).toBeGreaterThan(0);
    await recordFigure({
      scenario: 'API server restarted',
      fault: `kube-apiserver and etcd stopped and started on the same ports (down ${downFor.map((ms) => `${Math.round(ms / 1000)} s`).join(', ')})`,
      times: RESTARTS,
      convergeMs: converge,
      reported: `during: ADD of cached pods and DEL served, ADD of an unseen pod answered CNI code ${[...codes].join(', ')} (TryAgainLater); NodeConfig status written after the restart`,
    });
    expect(Math.max(...converge)).toBeLessThan(60_000);
  }, 240_000);

  // All of the agent's API traffic shares one connection pool (@flock/kube's HttpTransport): a
  // silenced connection silences every watch and request. The watchdog stops the silent watch
  // and the transport retires the pool (as it does when a request times out), so the restarted
  // watch opens a new connection: recovery follows --watchdog (before that fix it waited for
  // undici's PING to give up, about 2 minutes).
  const SILENCES = repeat(1);
  it(
    'watch made silent (its connection silenced): cached pods served, timeouts reported, a pod deleted meanwhile swept after',
    async () => {
      const converge: number[] = [];
      const reported = new Set<string>();
      for (let i = 0; i < SILENCES; i++) {
        const quiet = await f.createPod(`quiet-${i}`);
        await f.add(quiet);
        const late = await f.createPod(`late-${i}`);
        await sleep(1_000);
        const logFrom = f.node.agent!.logs.length;
        const silenced = Date.now();
        f.proxy.silenceOpen();
        await f.forceDelete(quiet.name);
        // Served from what the agent knows while its watches say nothing.
        expect((await f.add(late)).length).toBe(2);
        converge.push(
          await timeTo(
            'the deleted pod swept',
            async () => !(await f.storeEntries()).some((e) => e.pod === quiet.name),
            200_000,
            silenced,
          ),
        );
        for (const line of [
          'watch silent for too long',
          'could not write NodeConfig status',
          'could not set NetworkUnavailable',
          'watch connection failed',
        ])
          if (f.logged(line, logFrom).length) reported.add(line);
        expect([...reported]).toContain('watch silent for too long');
        await assertNoDuplicates();
      }
      await recordFigure({
        scenario: 'Watch made silent',
        fault: `the agent's API connection silenced (TCP open, nothing flows either way; new connections work); --watchdog ${WATCHDOG_MS / 1000}s`,
        times: SILENCES,
        convergeMs: converge,
        reported: `ADD of a cached pod served; agent log: ${[...reported].map((r) => `"${r}"`).join(', ')}`,
      });
      expect(Math.max(...converge)).toBeLessThan(60_000);
    },
    60_000 + SILENCES * 200_000,
  );

  it('NodeConfig deleted and re-created: ADD answers 11 and STATUS 50 meanwhile, no address handed out twice', async () => {
    const TIMES = repeat(2);
    const converge: number[] = [];
    const reportedIn: number[] = [];
    for (let i = 0; i < TIMES; i++) {
      const before = await f.createPod(`before-${i}`);
      await f.add(before);
      const during = await f.createPod(`during-${i}`);
      const gone = Date.now();
      await f.api.request({ method: 'DELETE', path: objectPath(NODECONFIGS, NODE) });
      reportedIn.push(
        await timeTo(
          'STATUS 50',
          async () => (await f.cniError('STATUS', during)).code === CniErrorCode.PluginNotAvailable,
          30_000,
          gone,
        ),
      );
      const refused = await f.cniError('ADD', during);
      expect(refused.code, refused.msg).toBe(CniErrorCode.TryAgainLater);
      expect(refused.msg).toMatch(/NodeConfig/);
      await f.del(before); // DEL needs no NodeConfig
      const nodeEvent = (await f.events(NODE)).find((e) => e.reason === 'NodeConfigMissing');
      expect(nodeEvent?.type).toBe('Warning');

      await f.applyNodeConfig();
      const back = Date.now();
      converge.push(
        await timeTo(
          'serving again with status',
          async () => {
            await f.node.cnitool('status', during.ns.path);
            await f.add(during);
            return (await f.condition('Ready'))?.status === 'True' && (await statusCountsStore());
          },
          60_000,
          back,
        ),
      );
      await assertNoDuplicates();
    }
    await recordFigure({
      scenario: 'NodeConfig deleted and re-created',
      fault: 'the NodeConfig object deleted, then applied again with the same spec',
      times: TIMES,
      convergeMs: converge,
      reported: `STATUS code 50 within ${Math.max(...reportedIn)} ms, ADD code 11 ("no NodeConfig"), Warning Event NodeConfigMissing on the Node; DEL served; status (Ready, allocations) on the new object after`,
    });
    expect(Math.max(...converge)).toBeLessThan(30_000);
  }, 240_000);
});
