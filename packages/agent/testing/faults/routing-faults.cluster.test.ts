// Faults on the node's routing side, for real: the node's BIRD SIGKILLed at random moments and
// started again (as its container would be), and the node's uplink to the router taken down and
// up. Pods come and go meanwhile. The agent keeps serving ADD/DEL, reports the outage in the
// NodeConfig's BGPEstablished condition, and once the fault is over the router learns exactly
// what the node should announce; each scenario prints its time to converge and asserts a bound.
import { grantTo } from '@flock/api/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FaultNode,
  randomMs,
  recordFigure,
  repeat,
  sleep,
  timeTo,
  type PodHandle,
} from '../fault-node.js';

const NODE = 'node-g';
const AGGREGATES = ['192.0.2.0/24', '2001:db8:100::/64'];
let f: FaultNode;
/** Pinned pods that should be announced now (ADDed, not DELeted). */
const live = new Map<string, PodHandle>();
let next = 1;

beforeAll(async () => {
  f = await FaultNode.start({
    nodeName: NODE,
    router: { routerAs: 65000, nodeAs: 64512 },
    spec: {
      cidr4: '192.0.2.0/24',
      pinnedCIDRs: ['2001:db8:200::/64'],
      pinnedGrants: [grantTo('default')],
      bgp: {
        asn: 64512,
        peers: [{ address: '2001:db8:ffff::1', asn: 65000, holdTime: 9, keepaliveTime: 3 }],
      },
    },
    agentArgs: ['--bgp-status-period', '1s', '--anycast-period', '1s'],
  });
  await f.router!.waitFor((l) => same(l, AGGREGATES), 60_000);
}, 300_000);

afterAll(async () => {
  await f?.destroy();
});

const same = (a: string[], b: string[]) => JSON.stringify(a) === JSON.stringify([...b].sort());
const expected = () => [...AGGREGATES, ...[...live.keys()].map((ip) => `${ip}/128`)].sort();
const bgp = () => f.condition('BGPEstablished');

/** ADD a new pinned pod (it must work whatever the fault), DEL the oldest live one. */
async function churn(): Promise<void> {
  const ip = `2001:db8:200::${(next++).toString(16)}`;
  const pod = await f.createPod(`pinned-${ip.replace(/:/g, '-')}`, {
    'flock.fritzlab.net/pinned-ip': ip,
  });
  expect(await f.add(pod)).toContain(`${ip}/128`);
  live.set(ip, pod);
  if (live.size > 2) {
    const [oldest, old] = [...live][0]!;
    await f.del(old);
    live.delete(oldest);
  }
}

/** The router has learned exactly what the node should announce, and status says Established. */
const converged = async () =>
  same(await f.router!.learned(), expected()) && (await bgp())?.status === 'True';

describe('faults on the routing side', () => {
  it('BIRD killed at random and restarted: ADD/DEL go on, BirdUnavailable reported, router converges', async () => {
    const KILLS = repeat(3);
    const converge: number[] = [];
    const reportedIn: number[] = [];
    const reasons = new Set<string>();
    await churn();
    await timeTo('converged before the kills', converged, 60_000);
    for (let i = 0; i < KILLS; i++) {
      // At a random moment: right after an ADD whose reload may still be in flight, or later.
      await churn();
      await sleep(randomMs(0, 1_500));
      const killed = Date.now();
      f.nodeBird!.child.kill('SIGKILL');
      await timeTo('BIRD dead', () => f.nodeBird!.exited, 5_000);
      reportedIn.push(
        await timeTo(
          'BGPEstablished False',
          async () => {
            const c = await bgp();
            if (c?.status === 'False') reasons.add(c.reason);
            return c?.status === 'False';
          },
          30_000,
          killed,
        ),
      );
      // A kill that cuts a reload short is first a failed reload (BirdReloadFailed: whether BIRD
      // took it is unknown); the retry, a backoff later, finds no BIRD.
      await timeTo(
        'BGPEstablished False, BirdUnavailable',
        async () => {
          const c = await bgp();
          if (c?.status === 'False') reasons.add(c.reason);
          return c?.status === 'False' && c.reason === 'BirdUnavailable';
        },
        15_000,
        killed,
      );
      await churn(); // bird.conf changes while BIRD is down
      await sleep(randomMs(0, 2_000));
      await f.startNodeBird();
      const started = Date.now();
      converge.push(await timeTo('the router converged', converged, 60_000, started));
    }
    await recordFigure({
      scenario: 'BIRD killed',
      fault:
        'the node BIRD SIGKILLed at a random moment (0-1.5 s after an ADD), down 0-2 s with an ADD and a DEL meanwhile, restarted',
      times: KILLS,
      convergeMs: converge,
      reported: `BGPEstablished False (${[...reasons].join(', ')}) within ${Math.max(...reportedIn)} ms of the kill; ADD/DEL served`,
    });
    expect(Math.max(...converge)).toBeLessThan(30_000);
  }, 240_000);

  it('uplink down and up: ADD/DEL go on, PeersNotEstablished reported, router converges', async () => {
    const FLAPS = repeat(2);
    const converge: number[] = [];
    const reportedIn: number[] = [];
    for (let i = 0; i < FLAPS; i++) {
      await timeTo('converged before the flap', converged, 60_000);
      const down = Date.now();
      await f.nodeNs.exec('ip', ['link', 'set', 'uplink', 'down']);
      reportedIn.push(
        await timeTo(
          'BGPEstablished False',
          async () => (await bgp())?.status === 'False',
          30_000,
          down,
        ),
      );
      const c = await bgp();
      expect(c?.reason).toBe('PeersNotEstablished');
      expect(c?.message).toContain('2001:db8:ffff::1');
      await churn(); // served while the node is cut off
      expect(await f.router!.waitFor((l) => l.length === 0, 15_000)).toEqual([]);
      await sleep(2_000);
      await f.nodeNs.exec('ip', ['link', 'set', 'uplink', 'up']);
      const up = Date.now();
      converge.push(await timeTo('the router converged', converged, 60_000, up));
    }
    await recordFigure({
      scenario: 'Uplink down and up',
      fault: 'the node uplink (veth to the router) set down for ~2 s, then up',
      times: FLAPS,
      convergeMs: converge,
      reported: `BGPEstablished False (PeersNotEstablished, naming the peer) within ${Math.max(...reportedIn)} ms; ADD/DEL served`,
    });
    expect(Math.max(...converge)).toBeLessThan(30_000);
  }, 240_000);
});
