// Value grammars of the annotations and labels flock reads. Parsers never throw: they
// return a result, because a bad annotation is the user's input, not a program error.
import { z } from 'zod';
import { ipFamily, ipToBigInt, type Family } from './net.js';

/** Interface-ID algorithms for a pod's IPv6 address (see @flock/ipam for what each does). */
export const IpAlgo = z.enum(['random', 'sequential', 'stable']);
export type IpAlgo = z.infer<typeof IpAlgo>;
export const DEFAULT_IP_ALGO: IpAlgo = 'random';

/** At most this many anycast addresses per pod (each is a host route and a BGP announcement). */
export const MAX_ANYCAST_PER_POD = 16;

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

/** ip-algo annotation: one algorithm name; surrounding whitespace is ignored, anything else is invalid. */
export function parseIpAlgo(raw: string | undefined): Parsed<IpAlgo> | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const parsed = IpAlgo.safeParse(raw.trim());
  return parsed.success
    ? { ok: true, value: parsed.data }
    : { ok: false, error: `${JSON.stringify(raw)} is not one of ${IpAlgo.options.join(', ')}` };
}

function parseAddressList(raw: string, what: string): Parsed<{ ip: string; family: Family }[]> {
  const items = raw.split(',').map((s) => s.trim());
  const out: { ip: string; family: Family }[] = [];
  for (const item of items) {
    const family = ipFamily(item);
    if (!family)
      return {
        ok: false,
        error: `${what}: ${JSON.stringify(item)} is not an IPv4 or IPv6 address`,
      };
    out.push({ ip: item, family });
  }
  return { ok: true, value: out };
}

export interface PinnedAddresses {
  ipv6?: string;
  ipv4?: string;
}

/** pinned-ip annotation: "IPv6", "IPv4" or both separated by a comma, at most one per family. */
export function parsePinnedIp(raw: string | undefined): Parsed<PinnedAddresses> | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const list = parseAddressList(raw, 'pinned-ip');
  if (!list.ok) return list;
  const result: PinnedAddresses = {};
  for (const { ip, family } of list.value) {
    const key = family === 6 ? 'ipv6' : 'ipv4';
    if (result[key]) return { ok: false, error: `pinned-ip: more than one IPv${family} address` };
    result[key] = ip;
  }
  return { ok: true, value: result };
}

/**
 * load-balancer-ips annotation (and the deprecated spec.loadBalancerIP): the addresses a
 * LoadBalancer Service asks for, at most one per family, no duplicates.
 */
export function parseLoadBalancerIps(
  raw: string | undefined,
): Parsed<{ ip: string; family: Family }[]> | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const list = parseAddressList(raw, 'load-balancer-ips');
  if (!list.ok) return list;
  for (const family of [6, 4] as const) {
    if (list.value.filter((a) => a.family === family).length > 1)
      return { ok: false, error: `load-balancer-ips: more than one IPv${family} address` };
  }
  return list;
}

/** anycast annotation: comma-separated addresses, no duplicates, at most MAX_ANYCAST_PER_POD. */
export function parseAnycast(raw: string | undefined): Parsed<string[]> | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  const list = parseAddressList(raw, 'anycast');
  if (!list.ok) return list;
  const ips = list.value.map((a) => a.ip);
  if (ips.length > MAX_ANYCAST_PER_POD) {
    return {
      ok: false,
      error: `anycast: ${ips.length} addresses, at most ${MAX_ANYCAST_PER_POD} allowed`,
    };
  }
  // Compare numerically: 2001:db8::1 and 2001:db8:0::1 are the same address.
  const keys = list.value.map((a) => `${a.family}/${ipToBigInt(a.ip)}`);
  const dup = ips.find((_, i) => keys.indexOf(keys[i] as string) !== i);
  if (dup) return { ok: false, error: `anycast: ${dup} is listed twice` };
  return { ok: true, value: ips };
}
