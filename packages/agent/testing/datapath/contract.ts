// The scripted sequence that FakeDatapath and IprouteDatapath must answer identically: pods
// set up and repaired after drift, anycast routes as veths come and go, blackholes, teardown
// after the namespace is gone. It returns a transcript of everything observable (namespace
// paths replaced by names); the tests compare it with CONTRACT_TRANSCRIPT for both.
import {
  DatapathError,
  type Datapath,
  type Finding,
  type PodSpec,
} from '../../src/datapath/types.js';
import { hostVethName } from '../../src/datapath/naming.js';
import type { Action, NsRef } from '../../src/datapath/model.js';
import { HOST, podNs } from '../../src/datapath/model.js';

export interface ContractHarness {
  datapath: Datapath;
  /** A new pod namespace; returns its path. */
  newPodNetns(): Promise<string>;
  deleteNetns(path: string): Promise<void>;
  /** Change a namespace behind the datapath's back, as an admin with `ip` would. */
  tamper(ns: NsRef, actions: Action[]): Promise<void>;
}

export type Transcript = [string, unknown][];

const kinds = (f: Finding[]) => f.map((x) => `${x.kind} ${x.object}`).sort();

export async function runContract(h: ContractHarness): Promise<Transcript> {
  const t: Transcript = [];
  const dp = h.datapath;
  const names = new Map<string, string>();
  // Namespace paths differ between runs and kernels: the transcript names them instead.
  const anonymise = (v: unknown): unknown =>
    typeof v === 'string' ? [...names].reduce((s, [path, name]) => s.replaceAll(path, name), v) : v;
  const say = (what: string, value: unknown) =>
    t.push([what, JSON.parse(JSON.stringify(value, (_k, v: unknown) => anonymise(v))) as unknown]);
  const stepOf = async (p: Promise<unknown>) => {
    try {
      await p;
      return 'ok';
    } catch (e) {
      return e instanceof DatapathError ? e.step : `not a DatapathError: ${String(e)}`;
    }
  };

  const netnsA = await h.newPodNetns();
  const netnsB = await h.newPodNetns();
  names.set(netnsA, 'NETNS-A').set(netnsB, 'NETNS-B');
  const a: PodSpec = {
    containerID: 'contract-a',
    ifName: 'eth0',
    netns: netnsA,
    hostVeth: hostVethName('contract-a', 'eth0'),
    ip6: '2001:db8:100::a',
    ip4: '192.0.2.10',
    anycast: ['2001:db8:aaaa::1', '198.51.100.7'],
  };
  const b: PodSpec = {
    containerID: 'contract-b',
    ifName: 'eth0',
    netns: netnsB,
    hostVeth: hostVethName('contract-b', 'eth0'),
    ip6: '2001:db8:100::b',
    anycast: ['2001:db8:aaaa::1'],
    mtu: 1400,
  };

  say('blackholes', await dp.ensureBlackholes(['2001:db8:100::/64', '192.0.2.0/26']));
  say('setup A', await dp.setupPod(a));
  say('check A', kinds(await dp.checkPod(a)));
  say('setup A again', (await dp.setupPod(a)).created);
  say('setup B', await dp.setupPod(b));
  say('check B', kinds(await dp.checkPod(b)));
  say('veths', await dp.listPodVeths());

  say('anycast v6', await dp.ensureAnycastRoute('2001:db8:aaaa::1', [b.hostVeth, a.hostVeth]));
  say(
    'anycast v6 quiet',
    await dp.ensureAnycastRoute('2001:db8:aaaa::1', [a.hostVeth, b.hostVeth]),
  );
  say(
    'anycast v4',
    await dp.ensureAnycastRoute('198.51.100.7', [a.hostVeth, b.hostVeth, 'flockgone']),
  );
  say('anycast list', await dp.listAnycastRoutes());
  // One nexthop, then two, then none: a plain route becomes multipath, then goes.
  say('anycast2 one', await dp.ensureAnycastRoute('2001:db8:aaaa::2', [a.hostVeth]));
  say('anycast2 two', await dp.ensureAnycastRoute('2001:db8:aaaa::2', [a.hostVeth, b.hostVeth]));
  say('anycast2 list', await dp.listAnycastRoutes());
  say('anycast2 none', await dp.ensureAnycastRoute('2001:db8:aaaa::2', []));
  say('anycast2 none again', await dp.ensureAnycastRoute('2001:db8:aaaa::2', []));
  say('anycast4 one', await dp.ensureAnycastRoute('198.51.100.8', [b.hostVeth]));
  say('anycast4 none', await dp.ensureAnycastRoute('198.51.100.8', []));

  // Drift: a host route deleted, a foreign address on eth0, a host route through the wrong veth.
  await h.tamper(HOST, [
    {
      op: 'route-del',
      step: 'host-routes',
      route: { dst: '2001:db8:100::a/128', type: 'unicast', proto: 241, nexthops: [] },
    },
    {
      op: 'route-replace',
      step: 'host-routes',
      route: { dst: '192.0.2.10/32', type: 'unicast', proto: 241, nexthops: [{ dev: b.hostVeth }] },
    },
  ]);
  await h.tamper(podNs(netnsA), [
    {
      op: 'addr-replace',
      step: 'pod-addresses',
      dev: 'eth0',
      cidr: '2001:db8:100::99/128',
      nodad: true,
    },
  ]);
  say('check A drifted', kinds(await dp.checkPod(a)));
  say('repair A', (await dp.setupPod(a)).created);
  say('check A repaired', kinds(await dp.checkPod(a)));

  // The host veth goes down: the kernel drops its routes and its IPv6 address.
  await h.tamper(HOST, [{ op: 'link-set', step: 'host-link', name: a.hostVeth, up: false }]);
  say('check A down', kinds(await dp.checkPod(a)));
  say('anycast list A down', await dp.listAnycastRoutes());
  await dp.setupPod(a);
  say('check A up', kinds(await dp.checkPod(a)));

  // B leaves: its veth takes its nexthops along (IPv4: the whole multipath route).
  say('teardown B', await dp.teardownPod(b));
  say('anycast list B gone', await dp.listAnycastRoutes());
  say('anycast v6 after B', await dp.ensureAnycastRoute('2001:db8:aaaa::1', [a.hostVeth]));
  say('anycast v4 none', await dp.ensureAnycastRoute('198.51.100.7', []));

  // A's sandbox disappears before DEL.
  await h.deleteNetns(netnsA);
  say('check A netns gone', kinds(await dp.checkPod(a)));
  say('flock routes', await dp.listFlockRoutes());
  say('teardown A', await dp.teardownPod({ ...a, ip6: a.ip6, ip4: a.ip4 }));
  say('teardown A again', await dp.teardownPod(a));
  say('setup into a missing netns', await stepOf(dp.setupPod(a)));
  say('setup refuses a bad name', await stepOf(dp.setupPod({ ...a, hostVeth: 'flock;reboot' })));

  say('blackholes shrink', await dp.ensureBlackholes(['2001:db8:100::/64']));
  say('blackholes none', await dp.ensureBlackholes([]));
  say('veths at the end', await dp.listPodVeths());
  say('flock routes at the end', await dp.listFlockRoutes());
  return t;
}
