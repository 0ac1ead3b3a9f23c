// NAT64 benchmark (root; tayga, iperf3, nft): can an IPv6-only pod reach IPv4 through a NAT64
// on its node at a production cost? Linux has no NAT64 in the kernel (and this machine's kernel
// no module to add one: Jool's is out of reach), so the translator is Tayga, from Debian: a
// single-threaded userspace process on a TUN device, stateless per packet, its dynamic pool
// translated once more to the node's address by nftables (NAT64 as production runs it).
//   ./dev npx nx run agent:build-testing && ./dev node packages/agent/dist/bench/nat64/run.js [--rounds N] [--seconds S] [--conns N] [--server-no-time-wait]
// Three namespaces, nothing of the host touched: a client (the pod: IPv6 and IPv4), the node
// (forwarding; Tayga on `nat64`; nft), an IPv4-only server. Variants, interleaved each round:
//   a  IPv4, routed (a public pod);
//   b  IPv4, SNAT to the node's address (a private pod: flock's masquerade);
//   c  NAT64: IPv6 to PREFIX (/96) → Tayga → IPv4 from its pool → SNAT to the node's address.
// Figures: TCP throughput (iperf3, one stream, S seconds), the translator's CPU per gigabit, and
// sequential new TCP connections a second (each one connect + a byte + close; the server closes
// first, as an HTTP server that says `Connection: close`). Not a test.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Netns, vethBetween } from '@flock/testkit';
import {
  ACCEPT_LOOP,
  TABLE_HEAD,
  benchHeader,
  benchOptions,
  row,
  sample,
  type Sample,
} from '../translator-measure.js';

const CLIENT6 = '2001:db8:c::2';
const NODE6 = '2001:db8:c::1';
const CLIENT4 = '10.64.0.2';
const NODE4_INSIDE = '10.64.0.1';
const NODE4 = '192.0.2.1';
const SERVER4 = '192.0.2.2';
/**
 * A network-specific prefix: the well-known 64:ff9b::/96 may not stand for non-global IPv4
 * (RFC 6052), and Tayga refuses to translate to them (this bench's server is 192.0.2.2).
 */
const PREFIX = '2001:db8:64::/96';
const POOL = '192.168.255.0/24';
const TAYGA4 = '192.168.255.1';
const TAYGA6 = '2001:db8:c:64::1';
/** The server's address as the client dials it through NAT64 (RFC 6052, /96). */
const SERVER_VIA_NAT64 = '2001:db8:64::c000:202';

const VARIANTS = ['a', 'b', 'c'] as const;
type Variant = (typeof VARIANTS)[number];
const LABEL: Record<Variant, string> = {
  a: 'a: IPv4, routed',
  b: "b: IPv4, SNAT to the node's address",
  c: 'c: NAT64 (Tayga) + SNAT',
};
const target = (v: Variant) => (v === 'c' ? SERVER_VIA_NAT64 : SERVER4);

async function wire(client: Netns, node: Netns, server: Netns): Promise<void> {
  await vethBetween(client, 'eth0', node, 'c0');
  await vethBetween(node, 'u0', server, 'eth0');
  await node.exec('sysctl', ['-qw', 'net.ipv6.conf.all.forwarding=1']);
  await node.exec('sysctl', ['-qw', 'net.ipv4.ip_forward=1']);
  for (const [ns, cmds] of [
    [
      client,
      [
        ['-6', 'addr', 'add', `${CLIENT6}/64`, 'dev', 'eth0', 'nodad'],
        ['addr', 'add', `${CLIENT4}/24`, 'dev', 'eth0'],
        ['-6', 'route', 'add', 'default', 'via', NODE6],
        ['route', 'add', 'default', 'via', NODE4_INSIDE],
      ],
    ],
    [
      node,
      [
        ['-6', 'addr', 'add', `${NODE6}/64`, 'dev', 'c0', 'nodad'],
        ['addr', 'add', `${NODE4_INSIDE}/24`, 'dev', 'c0'],
        ['addr', 'add', `${NODE4}/24`, 'dev', 'u0'],
      ],
    ],
    [
      server,
      [
        ['addr', 'add', `${SERVER4}/24`, 'dev', 'eth0'],
        // The routed variant's answers go back to the client's address.
        ['route', 'add', '10.64.0.0/24', 'via', NODE4],
      ],
    ],
  ] as const)
    for (const args of cmds) await ns.exec('ip', [...args]);
}

/** Tayga on `nat64` in the node: its pool and the NAT64 prefix routed to it. */
async function startTayga(node: Netns, dir: string) {
  const conf = join(dir, 'tayga.conf');
  await writeFile(
    conf,
    [
      'tun-device nat64',
      `ipv4-addr ${TAYGA4}`,
      // Its own IPv6 address (for ICMPv6 errors it sends).
      `ipv6-addr ${TAYGA6}`,
      `prefix ${PREFIX}`,
      `dynamic-pool ${POOL}`,
      `data-dir ${dir}`,
      '',
    ].join('\n'),
  );
  await node.exec('tayga', ['--mktun', '-c', conf]);
  await node.exec('ip', ['link', 'set', 'nat64', 'up']);
  await node.exec('ip', ['route', 'add', POOL, 'dev', 'nat64']);
  await node.exec('ip', ['-6', 'route', 'add', PREFIX, 'dev', 'nat64']);
  await node.exec('ip', ['-6', 'route', 'add', `${TAYGA6}/128`, 'dev', 'nat64']);
  const child = node.spawn('tayga', ['-c', conf, '--nodetach']);
  await new Promise((r) => setTimeout(r, 500));
  if (child.exitCode !== null) throw new Error(`tayga exited (${child.exitCode})`);
  // Its own pid: `ip netns exec` execs it in place.
  return { child, pid: child.pid! };
}

/** SNAT of the client's IPv4 (b) and always of Tayga's pool (c), to the node's uplink address. */
/** The masquerade's flags: flock's (` fully-random`), or NAT_FLAGS='' / ' random' for an A/B. */
const RANDOM_FLAG = process.env['NAT_FLAGS'] ?? ' fully-random';
const natScript = (snatClient: boolean) =>
  [
    'table ip nat64bench {',
    '\tchain post {',
    '\t\ttype nat hook postrouting priority srcnat; policy accept;',
    `\t\toifname "u0" ip saddr ${POOL} masquerade${RANDOM_FLAG}`,
    ...(snatClient ? [`\t\toifname "u0" ip saddr 10.64.0.0/24 masquerade${RANDOM_FLAG}`] : []),
    '\t}',
    '}',
    '',
  ].join('\n');

async function setNat(node: Netns, snatClient: boolean): Promise<void> {
  await node.exec('nft', ['delete', 'table', 'ip', 'nat64bench'], { okCodes: [0, 1] });
  await node.exec('nft', ['-f', '-'], { input: natScript(snatClient) });
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('nat64 bench: run as root (namespaces, tayga)');
  const { rounds, seconds, conns } = benchOptions();
  console.log(await benchHeader('NAT64', { rounds, seconds, conns }));
  const dir = await mkdtemp(join(tmpdir(), 'flock-nat64-'));
  const spaces: Netns[] = [];
  const children: { kill: (s: NodeJS.Signals) => unknown }[] = [];
  try {
    const [client, node, server] = [
      await Netns.create('n64c'),
      await Netns.create('n64n'),
      await Netns.create('n64s'),
    ];
    spaces.push(client, node, server);
    await wire(client, node, server);
    const translator = await startTayga(node, dir);
    children.push(translator.child);
    // --server-no-time-wait: the server keeps no TIME_WAIT sockets (an A/B of why translated
    // connections to one server are slow: a new SYN on a TIME_WAIT tuple of another flow).
    if (process.argv.includes('--server-no-time-wait'))
      await server.exec('sysctl', ['-qw', 'net.ipv4.tcp_max_tw_buckets=0']);
    const iperf = server.spawn('iperf3', ['-s', '-4']);
    children.push(iperf);
    const accept = server.spawn(process.execPath, ['-e', ACCEPT_LOOP]);
    children.push(accept);
    await new Promise((r) => setTimeout(r, 1000));
    // Each path works before anything is measured.
    await setNat(node, false);
    await client.exec('ping', ['-c', '1', '-W', '2', SERVER4]);
    await client.exec('ping', ['-6', '-c', '1', '-W', '2', SERVER_VIA_NAT64]);

    const results: Record<Variant, Sample[]> = { a: [], b: [], c: [] };
    for (let r = 0; r <= rounds; r++) {
      for (const v of r % 2 ? [...VARIANTS].reverse() : VARIANTS) {
        await setNat(node, v === 'b');
        await node.exec('conntrack', ['-F'], { okCodes: [0, 1] });
        const s = await sample(client, target(v), { seconds, conns, pids: [translator.pid] });
        if (r > 0) results[v].push(s); // round 0 warms up
      }
    }
    console.log(['', ...TABLE_HEAD].join('\n'));
    for (const v of VARIANTS) console.log(row(LABEL[v], results[v], results.a, v === 'c'));
  } finally {
    for (const c of children) c.kill('SIGKILL');
    for (const ns of spaces.reverse()) await ns.destroy();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
