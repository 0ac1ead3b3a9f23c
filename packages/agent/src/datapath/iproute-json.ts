// Reading `ip -N -d -json -force -batch -` output into the model. The output of a batch is one
// JSON array per successful line, concatenated; failed lines print nothing on stdout and
// "Command failed -:N" on stderr. Every array is checked with zod before it is trusted.
import { z } from 'zod';
import type { Family } from '@flock/api';
import { canonicalAddress } from '@flock/ipam';
import type { ReadLine } from './commands.js';
import type { NsAddress, NsLink, NsNeighbour, NsRoute, NsState, RouteType } from './model.js';

/** -N prints numbers, as strings; older iproute2 may print some as JSON numbers. */
const Num = z.union([z.number(), z.string().regex(/^\d+$/)]).transform(Number);

const AddrInfo = z.looseObject({
  family: z.string(),
  local: z.string(),
  prefixlen: z.number().int(),
  scope: Num.optional(),
  nodad: z.boolean().optional(),
});

const Link = z.looseObject({
  ifindex: z.number().int(),
  ifname: z.string(),
  link_index: z.number().int().optional(),
  flags: z.array(z.string()).default([]),
  mtu: z.number().int(),
  address: z.string().optional(),
  linkinfo: z.looseObject({ info_kind: z.string().optional() }).optional(),
  addr_info: z.array(AddrInfo).default([]),
});

const RouteNexthop = z.looseObject({ dev: z.string().optional(), gateway: z.string().optional() });

const Route = z.looseObject({
  type: Num.optional(),
  dst: z.string(),
  table: Num.optional(),
  protocol: Num.optional(),
  metric: z.number().int().optional(),
  dev: z.string().optional(),
  gateway: z.string().optional(),
  pref: z.string().optional(),
  nexthops: z.array(RouteNexthop).optional(),
});

const Neighbour = z.looseObject({
  dst: z.string(),
  dev: z.string().optional(),
  lladdr: z.string().optional(),
  state: z.array(z.string()).default([]),
});

const RT_TABLE_MAIN = 254;
const RTPROT_BOOT = 3;
const RTPROT_KERNEL = 2;
const RTN_UNICAST = 1;
const RTN_BLACKHOLE = 6;

/** Split concatenated JSON values ("[...]\n[...]") into their texts. */
export function splitJsonValues(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === '[' || c === '{') {
      if (depth++ === 0) start = i;
    } else if (c === ']' || c === '}') {
      if (--depth === 0) out.push(text.slice(start, i + 1));
      if (depth < 0) throw new Error('unbalanced JSON in ip output');
    } else if (depth === 0 && !/\s/.test(c ?? '')) {
      throw new Error(`unexpected ${JSON.stringify(c)} between JSON values in ip output`);
    }
  }
  if (depth !== 0 || inString) throw new Error('truncated JSON in ip output');
  return out;
}

/** Line numbers (1-based) that `ip -batch` reported as failed. */
export function failedBatchLines(stderr: string): Set<number> {
  return new Set([...stderr.matchAll(/Command failed -:(\d+)/g)].map((m) => Number(m[1])));
}

function canonical(ip: string): string {
  const c = canonicalAddress(ip);
  if (!c) throw new Error(`ip printed ${JSON.stringify(ip)}, which is not an address`);
  return c;
}

function parseAddress(a: z.infer<typeof AddrInfo>): NsAddress | undefined {
  if (a.family !== 'inet' && a.family !== 'inet6') return undefined;
  return {
    cidr: `${canonical(a.local)}/${a.prefixlen}`,
    family: a.family === 'inet6' ? 6 : 4,
    scope: a.scope ?? 0,
    nodad: a.nodad === true,
  };
}

function parseLinks(json: unknown): NsLink[] {
  return z
    .array(Link)
    .parse(json)
    .map((l) => {
      const kind = l.linkinfo?.info_kind;
      return {
        name: l.ifname,
        ifindex: l.ifindex,
        ...(kind ? { kind } : {}),
        mac: l.address ?? '',
        up: l.flags.includes('UP'),
        mtu: l.mtu,
        ...(kind === 'veth' && l.link_index !== undefined ? { peerIfindex: l.link_index } : {}),
        addresses: l.addr_info.flatMap((a) => parseAddress(a) ?? []),
      };
    });
}

function routeFamily(r: z.infer<typeof Route>): Family {
  if (r.dst !== 'default') return r.dst.includes(':') ? 6 : 4;
  // "default" does not say its family: a gateway does, and only IPv6 routes carry "pref".
  const gw = r.gateway ?? r.nexthops?.find((n) => n.gateway)?.gateway;
  if (gw) return gw.includes(':') ? 6 : 4;
  return r.pref !== undefined ? 6 : 4;
}

function routeDst(r: z.infer<typeof Route>, family: Family): string {
  if (r.dst === 'default') return family === 6 ? '::/0' : '0.0.0.0/0';
  const [addr = '', len] = r.dst.split('/');
  return `${canonical(addr)}/${len ?? (family === 6 ? 128 : 32)}`;
}

/** Main-table routes, without those the kernel derives from addresses (proto kernel). */
export function parseRoutes(json: unknown, impliedProto?: number): NsRoute[] {
  const out: NsRoute[] = [];
  for (const r of z.array(Route).parse(json)) {
    const proto = r.protocol ?? impliedProto ?? RTPROT_BOOT;
    if ((r.table ?? RT_TABLE_MAIN) !== RT_TABLE_MAIN || proto === RTPROT_KERNEL) continue;
    const family = routeFamily(r);
    const code = r.type ?? RTN_UNICAST;
    const type: RouteType =
      code === RTN_UNICAST ? 'unicast' : code === RTN_BLACKHOLE ? 'blackhole' : 'other';
    const hops = r.nexthops ?? (r.dev || r.gateway ? [{ dev: r.dev, gateway: r.gateway }] : []);
    out.push({
      dst: routeDst(r, family),
      family,
      type,
      proto,
      metric: r.metric ?? 0,
      // A blackhole "dev lo" is the kernel's bookkeeping, not a nexthop.
      nexthops:
        type === 'blackhole'
          ? []
          : hops.map((h) => ({
              dev: h.dev ?? '',
              ...(h.gateway ? { gateway: canonical(h.gateway) } : {}),
            })),
    });
  }
  return out;
}

function parseNeighbours(json: unknown): NsNeighbour[] {
  return z
    .array(Neighbour)
    .parse(json)
    .map((n) => ({
      dev: n.dev ?? '',
      ip: canonical(n.dst),
      ...(n.lladdr ? { mac: n.lladdr.toLowerCase() } : {}),
      permanent: n.state.includes('PERMANENT'),
    }));
}

const routeKey = (r: NsRoute) => `${r.dst}|${r.metric}|${r.type}`;

/**
 * The namespace state from a read batch's stdout and stderr. Lines marked mayFail that
 * failed are absent objects; any other failure is an error.
 */
export function parseReadBatch(
  lines: readonly ReadLine[],
  stdout: string,
  stderr: string,
): NsState {
  const failed = failedBatchLines(stderr);
  for (const n of failed) {
    if (!lines[n - 1]?.mayFail)
      throw new Error(
        `ip batch line ${n} (${lines[n - 1]?.tokens.join(' ') ?? '?'}) failed: ${stderr.trim()}`,
      );
  }
  const values = splitJsonValues(stdout);
  const expected = lines.length - failed.size;
  if (values.length !== expected)
    throw new Error(`ip printed ${values.length} JSON values for ${expected} successful lines`);
  const state: NsState = { links: [], routes: [], neighbours: [] };
  const seenRoutes = new Set<string>();
  let next = 0;
  lines.forEach((line, i) => {
    if (failed.has(i + 1)) return;
    const json: unknown = JSON.parse(values[next++] ?? '[]');
    const [object] = line.tokens;
    if (object === 'address') state.links.push(...parseLinks(json));
    else if (object === 'neigh') state.neighbours.push(...parseNeighbours(json));
    else if (object === 'route') {
      for (const r of parseRoutes(json, line.impliedProto)) {
        if (!seenRoutes.has(routeKey(r))) state.routes.push(r);
        seenRoutes.add(routeKey(r));
      }
    }
  });
  return state;
}
