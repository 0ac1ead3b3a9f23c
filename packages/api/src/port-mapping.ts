// hostPort: what the runtime passes in runtimeConfig.portMappings (the conflist's
// `capabilities: {portMappings: true}`), checked and put in the form flock keeps and renders.
// A node address and port of a protocol DNATed to the pod: `hostIP` one address of the node, or
// every node address (`family` 4 or 6 when the runtime asked for 0.0.0.0 or ::, else both).
import { z } from 'zod';
import { ipFamily, isIpAddress, type Family } from './net.js';

export const HOST_PORT_PROTOCOLS = ['tcp', 'udp', 'sctp'] as const;
export type HostPortProtocol = (typeof HOST_PORT_PROTOCOLS)[number];
/** At most this many mappings per pod (its containers' ports with a hostPort; the CNI config and the store entry stay small). */
export const MAX_HOST_PORTS = 1024;

const Port = z.int().min(1).max(65535);

/** One mapping as flock keeps it (the allocation store, the policy state). */
export const HostPort = z.strictObject({
  protocol: z.enum(HOST_PORT_PROTOCOLS),
  hostPort: Port,
  containerPort: Port,
  /** One node address; absent: every node address (of `family` when given). */
  hostIP: z.string().refine(isIpAddress, 'must be an IP address').optional(),
  family: z.union([z.literal(4), z.literal(6)]).optional(),
});
export type HostPort = z.infer<typeof HostPort>;

/** runtimeConfig.portMappings[] as runtimes send it (containerd, CRI-O: the CNI convention). */
const RuntimePortMapping = z.looseObject({
  hostPort: Port,
  containerPort: Port,
  protocol: z.string().max(16).optional(),
  hostIP: z.string().max(64).optional(),
});

const ANY: Record<string, Family> = { '0.0.0.0': 4, '::': 6 };

const FIELDS = ['hostPort', 'containerPort', 'protocol', 'hostIP'];

/**
 * The fields by their names in any case: containerd's go-cni marshals its PortMapping struct
 * without JSON tags (`HostPort`, `ContainerPort`, ...), and Go plugins read them because Go's
 * encoding/json matches names case-insensitively. The exact spelling wins over another.
 */
function goFieldNames(item: unknown): unknown {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) return item;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(item)) {
    const field = FIELDS.find((f) => f.toLowerCase() === k.toLowerCase());
    if (field && (k === field || !(field in item))) out[field] = v;
  }
  return out;
}

export type PortMappingsResult = { ok: true; value: HostPort[] } | { ok: false; error: string };

/**
 * The hostPorts of a CNI network configuration (`runtimeConfig.portMappings`), checked: ports
 * in range, protocol tcp/udp/sctp (any case; absent: tcp), hostIP an address, none twice with
 * different container ports. `canonical` spells an address the one way flock compares.
 */
export function parsePortMappings(
  config: unknown,
  canonical: (ip: string) => string,
): PortMappingsResult {
  const raw = (config as { runtimeConfig?: { portMappings?: unknown } } | undefined)?.runtimeConfig
    ?.portMappings;
  if (raw === undefined || raw === null) return { ok: true, value: [] };
  const list = z
    .array(z.preprocess(goFieldNames, RuntimePortMapping))
    .max(MAX_HOST_PORTS)
    .safeParse(raw);
  if (!list.success) {
    const issue = list.error.issues[0];
    return {
      ok: false,
      error: `runtimeConfig.portMappings${issue?.path.map((p) => `[${String(p)}]`).join('') ?? ''}: ${issue?.message ?? 'invalid'}`,
    };
  }
  const out: HostPort[] = [];
  for (const [i, m] of list.data.entries()) {
    const protocol = (m.protocol || 'tcp').toLowerCase();
    if (!(HOST_PORT_PROTOCOLS as readonly string[]).includes(protocol))
      return {
        ok: false,
        error: `runtimeConfig.portMappings[${i}]: protocol ${JSON.stringify(m.protocol)} is not tcp, udp or sctp`,
      };
    const ip = m.hostIP ?? '';
    let where: Pick<HostPort, 'hostIP' | 'family'> = {};
    if (ANY[ip]) where = { family: ANY[ip] };
    else if (ip !== '') {
      if (!ipFamily(ip) || !isIpAddress(ip))
        return {
          ok: false,
          error: `runtimeConfig.portMappings[${i}]: hostIP ${JSON.stringify(ip)} is not an IP address`,
        };
      where = { hostIP: canonical(ip) };
    }
    const mapping: HostPort = {
      protocol: protocol as HostPortProtocol,
      hostPort: m.hostPort,
      containerPort: m.containerPort,
      ...where,
    };
    const same = out.find((o) => hostPortsOverlap(o, mapping));
    if (same && same.containerPort !== mapping.containerPort)
      return {
        ok: false,
        error: `hostPort ${describeHostPort(mapping)} is asked twice, for container ports ${same.containerPort} and ${mapping.containerPort}`,
      };
    if (!same || !sameMapping(same, mapping)) out.push(mapping);
  }
  return { ok: true, value: out };
}

const familyOf = (m: HostPort): Family | undefined =>
  m.hostIP !== undefined ? ipFamily(m.hostIP) : m.family;

/** Two mappings take the same node address, port and protocol somewhere. */
export function hostPortsOverlap(a: HostPort, b: HostPort): boolean {
  if (a.protocol !== b.protocol || a.hostPort !== b.hostPort) return false;
  if (a.hostIP !== undefined && b.hostIP !== undefined) return a.hostIP === b.hostIP;
  const fa = familyOf(a);
  const fb = familyOf(b);
  return fa === undefined || fb === undefined || fa === fb;
}

/**
 * The mappings a pod with addresses of `families` can serve (flock DNATs within a family): one
 * bound to a family the pod has no address in (a hostIP of it, 0.0.0.0 or ::) is refused; one on
 * every node address (no hostIP) is kept for the families the pod has, `family` set when it has
 * one only (the other family's addresses stay free for other pods).
 */
export function servableHostPorts(
  mappings: readonly HostPort[],
  families: readonly Family[],
): PortMappingsResult {
  const out: HostPort[] = [];
  for (const m of mappings) {
    const family = familyOf(m);
    if (family !== undefined ? !families.includes(family) : families.length === 0)
      return {
        ok: false,
        error: `hostPort ${describeHostPort(m)} cannot reach the pod: the pod has no ${family ? `IPv${family} ` : ''}address (a hostPort is DNATed within its family)`,
      };
    const only = families.length === 1 ? families[0] : undefined;
    const served = family === undefined && only !== undefined ? { ...m, family: only } : m;
    if (!out.some((o) => sameMapping(o, served))) out.push(served);
  }
  return { ok: true, value: out };
}

const sameMapping = (a: HostPort, b: HostPort) =>
  a.protocol === b.protocol &&
  a.hostPort === b.hostPort &&
  a.containerPort === b.containerPort &&
  a.hostIP === b.hostIP &&
  a.family === b.family;

/** `tcp [2001:db8::1]:8080`, `udp *:53` (every address), `tcp 0.0.0.0:80` (every IPv4 one). */
export function describeHostPort(m: HostPort): string {
  const host =
    m.hostIP !== undefined
      ? m.hostIP.includes(':')
        ? `[${m.hostIP}]`
        : m.hostIP
      : m.family === 4
        ? '0.0.0.0'
        : m.family === 6
          ? '[::]'
          : '*';
  return `${m.protocol} ${host}:${m.hostPort}`;
}
