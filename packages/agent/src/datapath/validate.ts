// Every name, path and address is checked here before it reaches an argument array or an
// `ip -batch` line; anything else is refused with a DatapathError at step 'validate'.
// Addresses come out in canonical form (the kernel's), so they compare equal to what ip prints.
import { ContainerId, IfName, NetnsPath, ipToBigInt, type Family } from '@flock/api';
import { canonicalAddress, normalizeCidr, parseAddress } from '@flock/ipam';
import { HOST_VETH_PREFIX } from './naming.js';
import { DatapathError, type PodSpec, type PodTeardownSpec } from './types.js';

export interface ValidAddress {
  ip: string;
  family: Family;
}

export interface ValidPod {
  containerID: string;
  ifName: string;
  netns: string;
  hostVeth: string;
  ip6: string;
  ip4?: string;
  anycast: ValidAddress[];
  mtu?: number;
}

export interface ValidTeardown {
  containerID: string;
  ifName: string;
  netns?: string;
  hostVeth: string;
  ip6?: string;
  ip4?: string;
  anycast: ValidAddress[];
  exclusive?: boolean;
}

function refuse(message: string): never {
  throw new DatapathError('validate', message);
}

function check<T>(schema: { safeParse(v: unknown): { success: boolean } }, value: T, what: string) {
  if (!schema.safeParse(value).success) refuse(`${what} ${JSON.stringify(value)} is not valid`);
  return value;
}

function validIfName(name: string, what = 'interface name'): string {
  return check(IfName, name, what);
}

export function validNetns(path: string): string {
  return check(NetnsPath, path, 'netns path');
}

export function validHostVeth(name: string): string {
  validIfName(name, 'host veth name');
  if (!name.startsWith(HOST_VETH_PREFIX) || name.length === HOST_VETH_PREFIX.length)
    refuse(`host veth name ${JSON.stringify(name)} must start with "${HOST_VETH_PREFIX}"`);
  return name;
}

const inPrefix = (value: bigint, network: bigint, length: number, bits: number) =>
  value >> BigInt(bits - length) === network >> BigInt(bits - length);

/** Ranges that can never be a pod's own or anycast address (they would break routing). */
const UNUSABLE: Record<Family, [string, number][]> = {
  6: [
    ['::', 96], // unspecified, loopback, IPv4-compatible
    ['::ffff:0:0', 96], // IPv4-mapped
    ['fe80::', 10], // link-local: the gateways live there
    ['ff00::', 8], // multicast
  ],
  4: [
    ['0.0.0.0', 8],
    ['127.0.0.0', 8],
    ['169.254.0.0', 16], // link-local: the gateway lives there
    ['224.0.0.0', 3], // multicast, reserved, broadcast
  ],
};

/** A unicast address usable on a pod, canonical; refuses anything else. */
export function validAddress(text: string, what: string, family?: Family): ValidAddress {
  const parsed = parseAddress(text);
  const ip = canonicalAddress(text);
  if (!parsed || !ip) return refuse(`${what} ${JSON.stringify(text)} is not an IP address`);
  if (family && parsed.family !== family)
    refuse(`${what} ${JSON.stringify(text)} must be an IPv${family} address`);
  const bits = parsed.family === 6 ? 128 : 32;
  for (const [net, len] of UNUSABLE[parsed.family]) {
    if (inPrefix(parsed.value, ipToBigInt(net), len, bits))
      refuse(`${what} ${ip} is inside ${net}/${len}, which a pod cannot use`);
  }
  return { ip, family: parsed.family };
}

/** A network CIDR (host bits zero), canonical. */
export function validCidr(text: string, what: string): string {
  const n = normalizeCidr(text);
  if (!n.ok) refuse(`${what}: ${n.error}`);
  return n.value;
}

function validAnycast(list: string[] | undefined): ValidAddress[] {
  if (list !== undefined && !Array.isArray(list)) refuse('anycast must be a list of addresses');
  const out = new Map<string, ValidAddress>();
  for (const a of list ?? []) {
    const v = validAddress(a, 'anycast address');
    out.set(v.ip, v);
  }
  return [...out.values()].sort((a, b) => a.ip.localeCompare(b.ip));
}

function validMtu(mtu: number | undefined): number | undefined {
  if (mtu === undefined) return undefined;
  // IPv6 needs 1280; every pod has an IPv6 address.
  if (!Number.isInteger(mtu) || mtu < 1280 || mtu > 65535)
    refuse(`mtu ${String(mtu)} must be an integer in 1280..65535`);
  return mtu;
}

export function validatePod(spec: PodSpec): ValidPod {
  if (typeof spec !== 'object' || spec === null) refuse('pod spec must be an object');
  const ifName = validIfName(spec.ifName);
  if (ifName === 'lo') refuse('the pod interface cannot be lo');
  return {
    containerID: check(ContainerId, spec.containerID, 'container ID'),
    ifName,
    netns: validNetns(spec.netns),
    hostVeth: validHostVeth(spec.hostVeth),
    ip6: validAddress(spec.ip6, 'ip6', 6).ip,
    ...(spec.ip4 !== undefined ? { ip4: validAddress(spec.ip4, 'ip4', 4).ip } : {}),
    anycast: validAnycast(spec.anycast),
    ...(spec.mtu !== undefined ? { mtu: validMtu(spec.mtu) } : {}),
  };
}

export function validateTeardown(spec: PodTeardownSpec): ValidTeardown {
  if (typeof spec !== 'object' || spec === null) refuse('teardown spec must be an object');
  return {
    containerID: check(ContainerId, spec.containerID, 'container ID'),
    ifName: validIfName(spec.ifName),
    ...(spec.netns !== undefined ? { netns: validNetns(spec.netns) } : {}),
    hostVeth: validHostVeth(spec.hostVeth),
    ...(spec.ip6 !== undefined ? { ip6: validAddress(spec.ip6, 'ip6', 6).ip } : {}),
    ...(spec.ip4 !== undefined ? { ip4: validAddress(spec.ip4, 'ip4', 4).ip } : {}),
    anycast: validAnycast(spec.anycast),
    ...(spec.exclusive === true ? { exclusive: true } : {}),
  };
}

/** The host route destination of an address: /128 or /32. */
export function hostCidr(a: ValidAddress): string {
  return `${a.ip}/${a.family === 6 ? 128 : 32}`;
}
