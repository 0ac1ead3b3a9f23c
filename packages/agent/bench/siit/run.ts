// Private IPv4 between nodes benchmark (root; tayga, iperf3): what does carrying a Private
// pool's IPv4 between nodes as IPv6 cost, next to the IPv6 the same pods have? Each node runs
// the agent's inter-node translator configuration (siit.ts: Tayga, stateless, the translation
// prefix, the pool's range in, the slice's part of the prefix back), so a packet is translated
// twice, once per node, in userspace.
//   ./dev npx nx run agent:build-testing && ./dev node packages/agent/dist/bench/siit/run.js [--rounds N] [--seconds S] [--conns N]
// Four namespaces, nothing of the host touched: a client pod, node A, node B, a server pod.
// Variants, interleaved each round:
//   a  IPv6 between the pods, routed (what the pods have anyway);
//   b  private IPv4 between the pods: A's Tayga → IPv6 in the prefix → B's Tayga.
// Figures: TCP throughput (iperf3, one stream), both translators' CPU per gigabit, sequential
// new TCP connections a second. Not a test.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Netns, vethBetween } from '@flock/testkit';
import { SIIT_IFACE, siitCommands, siitConfig, type InterNode } from '../../src/nat64/siit.js';
import {
  ACCEPT_LOOP,
  TABLE_HEAD,
  benchHeader,
  benchOptions,
  row,
  sample,
  type Sample,
} from '../translator-measure.js';

const PREFIX = 'fd12:3456:789a:4::/96';
const POOL = '10.20.0.0/16';
/** Each side: its pod's addresses, its node's pod-facing and fabric addresses, its slice. */
const SIDES = {
  a: {
    pod4: '10.20.1.5',
    pod6: '2001:db8:a::5',
    gw6: '2001:db8:a::1',
    fabric6: '2001:db8:ff::1',
    slice: '10.20.1.0/24',
    net6: '2001:db8:a::/64',
  },
  b: {
    pod4: '10.20.2.7',
    pod6: '2001:db8:b::7',
    gw6: '2001:db8:b::1',
    fabric6: '2001:db8:ff::2',
    slice: '10.20.2.0/24',
    net6: '2001:db8:b::/64',
  },
} as const;
type Side = keyof typeof SIDES;
const other = (s: Side): Side => (s === 'a' ? 'b' : 'a');
const LABEL = { a: 'a: IPv6, routed', b: 'b: private IPv4, translated on both nodes' };

async function wireSide(side: Side, pod: Netns, node: Netns, dir: string) {
  const me = SIDES[side];
  const peer = SIDES[other(side)];
  await vethBetween(pod, 'eth0', node, 'p0');
  await node.exec('sysctl', ['-qw', 'net.ipv6.conf.all.forwarding=1']);
  await node.exec('sysctl', ['-qw', 'net.ipv4.ip_forward=1']);
  for (const args of [
    ['addr', 'add', `${me.pod4}/32`, 'dev', 'eth0'],
    ['-6', 'addr', 'add', `${me.pod6}/64`, 'dev', 'eth0', 'nodad'],
    ['route', 'add', '169.254.1.1', 'dev', 'eth0'],
    ['route', 'add', 'default', 'via', '169.254.1.1', 'dev', 'eth0'],
    ['-6', 'route', 'add', 'default', 'via', me.gw6],
  ])
    await pod.exec('ip', args);
  for (const args of [
    ['addr', 'add', '169.254.1.1/32', 'dev', 'p0'],
    ['-6', 'addr', 'add', `${me.gw6}/64`, 'dev', 'p0', 'nodad'],
    ['route', 'add', `${me.pod4}/32`, 'dev', 'p0'],
    ['route', 'add', 'blackhole', me.slice],
    ['-6', 'route', 'add', peer.net6, 'via', peer.fabric6],
  ])
    await node.exec('ip', args);
  await node.exec('sysctl', ['-qw', 'net.ipv4.conf.p0.proxy_arp=1']);
  // The agent's inter-node translator, as siit.ts configures it; the other slice's part of the
  // prefix routed to the other node, as the routers would.
  const want: InterNode = { prefix: PREFIX, slice: me.slice, clusterCIDRs: [POOL] };
  const conf = join(dir, `siit-${side}.conf`);
  await writeFile(conf, siitConfig(want));
  for (const [file, args] of siitCommands(want, conf, 'tayga')) await node.exec(file, args);
  const peerPart = siitCommands({ ...want, slice: peer.slice }, conf, 'tayga').at(-1)![1];
  await node.exec('ip', ['-6', 'route', 'add', peerPart[3]!, 'via', peer.fabric6]);
  const child = node.spawn('tayga', ['-c', conf, '-d']);
  await new Promise((r) => setTimeout(r, 500));
  if (child.exitCode !== null) throw new Error(`tayga exited (${child.exitCode})`);
  return { child, pid: child.pid! };
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('siit bench: run as root (namespaces, tayga)');
  const o = benchOptions();
  console.log(await benchHeader('Private IPv4 between nodes (SIIT)', o));
  const dir = await mkdtemp(join(tmpdir(), 'flock-siit-'));
  const spaces: Netns[] = [];
  const children: { kill: (s: NodeJS.Signals) => unknown }[] = [];
  try {
    const [podA, nodeA, nodeB, podB] = [
      await Netns.create('sitpa'),
      await Netns.create('sitna'),
      await Netns.create('sitnb'),
      await Netns.create('sitpb'),
    ];
    spaces.push(podA, nodeA, nodeB, podB);
    await vethBetween(nodeA, 'u0', nodeB, 'u0');
    await nodeA.exec('ip', ['-6', 'addr', 'add', `${SIDES.a.fabric6}/64`, 'dev', 'u0', 'nodad']);
    await nodeB.exec('ip', ['-6', 'addr', 'add', `${SIDES.b.fabric6}/64`, 'dev', 'u0', 'nodad']);
    const ta = await wireSide('a', podA, nodeA, dir);
    const tb = await wireSide('b', podB, nodeB, dir);
    children.push(ta.child, tb.child);
    const iperf = podB.spawn('iperf3', ['-s']);
    const accept = podB.spawn(process.execPath, ['-e', ACCEPT_LOOP, '::']);
    children.push(iperf, accept);
    await new Promise((r) => setTimeout(r, 1000));
    // Each path works before anything is measured.
    await podA.exec('ping', ['-c', '1', '-W', '2', SIDES.b.pod4]);
    await podA.exec('ping', ['-6', '-c', '1', '-W', '2', SIDES.b.pod6]);
    if (!(await nodeA.exec('ip', ['link', 'show', SIIT_IFACE])).stdout.includes(SIIT_IFACE))
      throw new Error('no translator device');

    const target = { a: SIDES.b.pod6, b: SIDES.b.pod4 };
    const results: Record<'a' | 'b', Sample[]> = { a: [], b: [] };
    for (let r = 0; r <= o.rounds; r++) {
      for (const v of r % 2 ? (['b', 'a'] as const) : (['a', 'b'] as const)) {
        const s = await sample(podA, target[v], { ...o, pids: [ta.pid, tb.pid] });
        if (r > 0) results[v].push(s); // round 0 warms up
      }
    }
    console.log(['', ...TABLE_HEAD].join('\n'));
    for (const v of ['a', 'b'] as const)
      console.log(row(LABEL[v], results[v], results.a, v === 'b'));
  } finally {
    for (const c of children) c.kill('SIGKILL');
    for (const ns of spaces.reverse()) await ns.destroy();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
