// Test infrastructure: the crash suite's invariants, read from the real things —
// the store file, the node namespace (veths, routes), the pods' namespaces, the nftables table
// and the rendered bird.conf — and compared. Each violation is one line saying what is wrong.
import { readFile } from 'node:fs/promises';
import { parseStoreFile, type AllocationEntry } from '../src/store/index.js';
import type { Netns } from '@flock/testkit';
import { FLOCK_ANYCAST_RT_PROTO, FLOCK_RT_PROTO } from '../src/datapath/index.js';

export interface CrashSlot {
  name: string;
  ns: Netns;
  containerID: string;
  veth: string;
  /** The pod's pinned IPv6 address, if it asks for one. */
  pinned?: string;
  anycast?: string;
}

export interface InvariantInput {
  node: Netns;
  slots: CrashSlot[];
  storePath: string;
  birdConfigPath: string;
  /** The node's aggregates (always exported). */
  aggregates: string[];
}

/** The store file must always load: this throws (with the store's own message) when it does not. */
export async function loadStore(path: string): Promise<AllocationEntry[]> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  return parseStoreFile(path, text).entries;
}

const json = async <T>(ns: Netns, args: string[]): Promise<T> =>
  JSON.parse((await ns.exec('ip', ['-j', ...args])).stdout || '[]') as T;

interface IpRoute {
  dst: string;
  dev?: string;
  type?: string;
}
interface IpLink {
  ifname: string;
  flags: string[];
  addr_info?: { local: string; prefixlen: number }[];
}

const hostDst = (dst: string) =>
  dst.includes('/') ? dst : `${dst}/${dst.includes(':') ? 128 : 32}`;

/** Address uniqueness, the store's own consistency, and no leftover pending entries. */
export function storeViolations(entries: AllocationEntry[], afterStart: boolean): string[] {
  const out: string[] = [];
  const holders = new Map<string, string>();
  for (const e of entries) {
    for (const ip of [e.ip6, e.ip4].filter((x): x is string => !!x)) {
      const other = holders.get(ip);
      if (other) out.push(`address ${ip} held by ${other} and ${e.containerID}`);
      holders.set(ip, e.containerID);
    }
    if (afterStart && e.state !== 'committed')
      out.push(`${e.state} entry ${e.containerID} survived the start-up sweep`);
  }
  return out;
}

/** The node and pod kernels against the committed entries: nothing missing, nothing extra. */
export async function kernelViolations(
  input: InvariantInput,
  committed: AllocationEntry[],
): Promise<string[]> {
  const out: string[] = [];
  const { node } = input;
  const bySlot = new Map(input.slots.map((s) => [s.containerID, s]));
  const wanted = new Map(committed.map((e) => [bySlot.get(e.containerID)?.veth ?? '?', e]));
  for (const e of committed)
    if (!bySlot.has(e.containerID)) out.push(`entry for unknown container ${e.containerID}`);

  const links = await json<IpLink[]>(node, ['addr', 'show', 'type', 'veth']);
  const routes = [
    ...(await json<IpRoute[]>(node, ['-6', 'route', 'show', 'proto', String(FLOCK_RT_PROTO)])),
    ...(await json<IpRoute[]>(node, ['-4', 'route', 'show', 'proto', String(FLOCK_RT_PROTO)])),
  ].filter((r) => r.type !== 'blackhole');
  const anycastRoutes = [
    ...(await json<IpRoute[]>(node, [
      '-6',
      'route',
      'show',
      'proto',
      String(FLOCK_ANYCAST_RT_PROTO),
    ])),
    ...(await json<IpRoute[]>(node, [
      '-4',
      'route',
      'show',
      'proto',
      String(FLOCK_ANYCAST_RT_PROTO),
    ])),
  ];
  for (const l of links.filter((x) => x.ifname.startsWith('flock')))
    if (!wanted.has(l.ifname)) out.push(`veth ${l.ifname} without a committed allocation`);
  const routeOwners = new Map<string, string>();
  for (const r of routes) {
    const dst = hostDst(r.dst);
    routeOwners.set(dst, r.dev ?? '');
    const e = wanted.get(r.dev ?? '');
    if (!e || (dst !== `${e.ip6}/128` && dst !== `${e.ip4}/32`))
      out.push(`route ${dst} dev ${r.dev} without a committed allocation`);
  }
  const anycast = new Set(committed.flatMap((e) => e.anycast));
  for (const r of anycastRoutes)
    if (!anycast.has(r.dst.replace(/\/\d+$/, '')))
      out.push(`anycast route ${r.dst} without a committed allocation`);

  for (const [veth, e] of wanted) {
    const link = links.find((l) => l.ifname === veth);
    if (!link) {
      out.push(`committed ${e.containerID}: veth ${veth} missing`);
      continue;
    }
    if (!link.flags.includes('UP')) out.push(`committed ${e.containerID}: veth ${veth} down`);
    if (!link.addr_info?.some((a) => a.local === 'fe80::1'))
      out.push(`committed ${e.containerID}: fe80::1 missing on ${veth}`);
    for (const dst of [`${e.ip6}/128`, ...(e.ip4 ? [`${e.ip4}/32`] : [])])
      if (routeOwners.get(dst) !== veth)
        out.push(`committed ${e.containerID}: route ${dst} via ${veth} missing`);
  }

  // Inside the pods: the committed ones wired, the others without a flock interface; and
  // no address on two pods' eth0.
  const seen = new Map<string, string>();
  for (const slot of input.slots) {
    const eth0 = (
      await json<IpLink[]>(slot.ns, ['addr', 'show']).then((ls) =>
        ls.find((l) => l.ifname === 'eth0'),
      )
    )?.addr_info?.map((a) => a.local);
    const e = committed.find((x) => x.containerID === slot.containerID);
    if (!e) {
      if (eth0) out.push(`pod ${slot.name}: eth0 present without a committed allocation`);
      continue;
    }
    for (const ip of [e.ip6, ...(e.ip4 ? [e.ip4] : [])])
      if (!eth0?.includes(ip)) out.push(`committed ${slot.name}: ${ip} missing on the pod's eth0`);
    for (const ip of eth0 ?? []) {
      if (seen.has(ip)) out.push(`address ${ip} on the eth0 of ${seen.get(ip)} and ${slot.name}`);
      seen.set(ip, slot.name);
    }
    const defaults = await json<IpRoute[]>(slot.ns, ['-6', 'route', 'show', 'default']);
    if (!defaults.some((r) => r.dev === 'eth0'))
      out.push(`committed ${slot.name}: no IPv6 default route in the pod`);
  }
  return out;
}

interface NftSet {
  set?: { name: string; elem?: (string | { concat: string[] })[] };
}

/** Elements of the flock table's pod sets, as "veth" and "veth . address" strings. */
async function nftElements(node: Netns): Promise<Set<string> | undefined> {
  const r = await node.exec('nft', ['-j', 'list', 'table', 'inet', 'flock'], { okCodes: [0, 1] });
  if (r.code !== 0) return undefined;
  const items = (JSON.parse(r.stdout) as { nftables: NftSet[] }).nftables;
  const out = new Set<string>();
  for (const { set } of items) {
    if (!set || !['pod_ifaces', 'pod_sources_v4', 'pod_sources_v6'].includes(set.name)) continue;
    for (const el of set.elem ?? []) out.add(typeof el === 'string' ? el : el.concat.join(' . '));
  }
  return out;
}

/** The policy table and the BIRD config against the committed entries. */
export async function policyAndBirdViolations(
  input: InvariantInput,
  committed: AllocationEntry[],
): Promise<string[]> {
  const out: string[] = [];
  const vethOf = new Map(input.slots.map((s) => [s.containerID, s.veth]));
  const want = new Set(
    committed.flatMap((e) => {
      const veth = vethOf.get(e.containerID) ?? '?';
      // A pod may send from its own addresses (anti-spoofing), and from its anycast addresses
      // only while it is Ready: these pods never are (no kubelet runs them), so never from those.
      const sources = [e.ip6, ...(e.ip4 ? [e.ip4] : [])];
      return [veth, ...sources.map((ip) => `${veth} . ${ip}`)];
    }),
  );
  const have = await nftElements(input.node);
  if (!have) out.push('no nftables table inet flock');
  for (const el of have ?? [])
    if (!want.has(el)) out.push(`nft element ${el} without a committed allocation`);
  for (const el of want) if (have && !have.has(el)) out.push(`nft element ${el} missing`);

  const conf = await readFile(input.birdConfigPath, 'utf8').catch(() => '');
  const exported = new Set([...conf.matchAll(/^\s*route (\S+) blackhole;$/gm)].map((m) => m[1]!));
  const expected = new Set([
    ...input.aggregates,
    ...committed.filter((e) => e.pinned).map((e) => `${e.ip6}/128`),
  ]);
  for (const p of exported)
    if (!expected.has(p)) out.push(`BIRD exports ${p} without a committed allocation`);
  for (const p of expected) if (!exported.has(p)) out.push(`BIRD does not export ${p}`);
  return out;
}
