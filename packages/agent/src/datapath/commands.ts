// Command builders: model changes and reads as `ip -batch` lines, and the argument arrays
// that run them in the right namespace. Every token is checked again here (defence in depth
// on top of validate.ts): batch lines are split on blanks by ip, so a token may hold none.
import type { Action, NsRef, ReadQuery, RouteSpec } from './model.js';

const SAFE_TOKEN = /^[A-Za-z0-9_.:/-]+$/;

export function assertSafeToken(token: string): string {
  if (!SAFE_TOKEN.test(token))
    throw new Error(`refusing unsafe token ${JSON.stringify(token)} in an ip batch line`);
  return token;
}

/** The text fed to `ip -batch -`: one command per line, tokens joined by single blanks. */
export function batchText(lines: readonly (readonly string[])[]): string {
  return lines.map((tokens) => tokens.map(assertSafeToken).join(' ') + '\n').join('');
}

function routeTokens(verb: 'replace' | 'del', r: RouteSpec): string[] {
  const head = ['route', verb, ...(r.type === 'blackhole' ? ['blackhole'] : []), r.dst];
  const proto = ['proto', String(r.proto)];
  if (r.type === 'blackhole' || verb === 'del') return [...head, ...proto];
  const hop = (n: { dev: string; gateway?: string }) => [
    ...(n.gateway ? ['via', n.gateway] : []),
    'dev',
    n.dev,
  ];
  const [only, ...more] = r.nexthops;
  if (only && more.length === 0) return [...head, ...hop(only), ...proto];
  return [...head, ...proto, ...r.nexthops.flatMap((n) => ['nexthop', ...hop(n)])];
}

/** One action as the tokens of one ip batch line. */
export function actionTokens(a: Action): string[] {
  switch (a.op) {
    case 'veth-add': {
      const mtu = a.mtu !== undefined ? ['mtu', String(a.mtu)] : [];
      return [
        'link',
        'add',
        a.name,
        'address',
        a.mac,
        ...mtu,
        'type',
        'veth',
        'peer',
        'name',
        a.peer.name,
        'address',
        a.peer.mac,
        ...mtu,
        'netns',
        a.peer.netns,
      ];
    }
    case 'link-set':
      return [
        'link',
        'set',
        'dev',
        a.name,
        ...(a.addrGenNone ? ['addrgenmode', 'none'] : []),
        ...(a.mtu !== undefined ? ['mtu', String(a.mtu)] : []),
        ...(a.up === undefined ? [] : [a.up ? 'up' : 'down']),
      ];
    case 'link-del':
      return ['link', 'del', 'dev', a.name];
    case 'addr-replace':
      return [
        'address',
        'replace',
        a.cidr,
        'dev',
        a.dev,
        ...(a.scope ? ['scope', a.scope] : []),
        ...(a.nodad ? ['nodad'] : []),
      ];
    case 'addr-del':
      return ['address', 'del', a.cidr, 'dev', a.dev];
    case 'neigh-replace':
      return ['neigh', 'replace', a.ip, 'lladdr', a.mac, 'dev', a.dev, 'nud', 'permanent'];
    case 'route-replace':
      return routeTokens('replace', a.route);
    case 'route-del':
      return routeTokens('del', a.route);
  }
}

export interface ReadLine {
  tokens: string[];
  /** `ip route show proto N` leaves the protocol out of its output: it is implied. */
  impliedProto?: number;
  /** A failure of this line means "absent", not an error (a named link that does not exist). */
  mayFail?: boolean;
}

/** The `ip -json -batch` lines that read what the query asks for. */
export function readLines(q: ReadQuery): ReadLine[] {
  const lines: ReadLine[] = [];
  if (q.links === 'all') lines.push({ tokens: ['address', 'show'] });
  else if (q.links && 'names' in q.links)
    for (const name of q.links.names)
      lines.push({ tokens: ['address', 'show', 'dev', name], mayFail: true });
  else if (q.links) lines.push({ tokens: ['address', 'show', 'type', q.links.kind] });
  // "table all" makes ip dump both families in batch mode; the parser keeps the main table.
  if (q.routes === 'all') lines.push({ tokens: ['route', 'show', 'table', 'all'] });
  else if (q.routes) {
    for (const p of q.routes.protos ?? [])
      lines.push({
        tokens: ['route', 'show', 'table', 'all', 'proto', String(p)],
        impliedProto: p,
      });
    for (const dst of q.routes.exact ?? [])
      lines.push({ tokens: ['route', 'show', 'table', 'all', 'to', 'exact', dst] });
  }
  if (q.neighbours) lines.push({ tokens: ['neigh', 'show'] });
  return lines;
}

/** ip options of a read: numeric (-N, immune to rt_protos names), details, JSON, keep going. */
export const READ_OPTIONS = ['-N', '-d', '-json', '-force', '-batch', '-'] as const;
/** ip options of a write: stop at the first failing line, which ip names ("-:N"). */
export const WRITE_OPTIONS = ['-batch', '-'] as const;
/** ip options of a best-effort write (cleanup): carry on past failing lines. */
export const FORCE_WRITE_OPTIONS = ['-force', '-batch', '-'] as const;

/**
 * The program and arguments that run `ip <ipArgs>` in a namespace: the node's own (directly,
 * or through nsenter when the "host" is a test namespace) or a pod's, by path.
 */
export function ipCommand(
  ns: NsRef,
  hostNetns: string | undefined,
  ipArgs: readonly string[],
): { file: string; args: string[] } {
  const netns = ns.kind === 'pod' ? ns.netns : hostNetns;
  if (netns === undefined) return { file: 'ip', args: [...ipArgs] };
  return { file: 'nsenter', args: [`--net=${assertSafeToken(netns)}`, 'ip', ...ipArgs] };
}

/** `sysctl -n key` in the test "host" namespace (production reads /proc/sys itself). */
export function sysctlReadCommand(hostNetns: string, key: string) {
  return {
    file: 'nsenter',
    args: [`--net=${assertSafeToken(hostNetns)}`, 'sysctl', '-n', assertSafeToken(key)],
  };
}

/** `sysctl -w key=value` in the test "host" namespace (production writes /proc/sys itself). */
export function sysctlCommand(hostNetns: string, key: string, value: string) {
  return {
    file: 'nsenter',
    args: [
      `--net=${assertSafeToken(hostNetns)}`,
      'sysctl',
      '-w',
      `${assertSafeToken(key)}=${assertSafeToken(value)}`,
    ],
  };
}
