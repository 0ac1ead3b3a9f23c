// Names, numbers and addresses that identify flock's objects in the kernel. They are part of
// the node's on-disk and in-kernel contract: changing one strands objects made by older agents.
import { createHash } from 'node:crypto';

/** Every host-side veth flock creates starts with this (listPodVeths and GC look for it). */
export const HOST_VETH_PREFIX = 'flock';

/**
 * Route protocol (rtm_protocol) of flock's pod host routes, the pods' own routes and the node's
 * summary blackholes: 0xf1. Unassigned in the kernel's rtnetlink.h (which stops at 192, eigrp),
 * in /etc/iproute2/rt_protos and in FRR's list (186-198); operators may name it in
 * /etc/iproute2/rt_protos.d/flock.conf ("241 flock"). BIRD can tell flock's routes by krt_source.
 */
export const FLOCK_RT_PROTO = 241;
/** Route protocol of anycast routes (0xf2), so that they are told apart from pod /32 routes. */
export const FLOCK_ANYCAST_RT_PROTO = 242;

/** Link-local gateways seen by every pod; the host veth carries them (no bridge, no subnet). */
export const GATEWAY6 = 'fe80::1';
export const GATEWAY4 = '169.254.1.1';
/** The gateway addresses on the host veth. fe80::1 is per link, so every veth may hold it. */
export const HOST_GATEWAY6_CIDR = `${GATEWAY6}/64`;
/** Scope host: it still answers ARP, but the node never picks it as a source for pod traffic. */
export const HOST_GATEWAY4_CIDR = `${GATEWAY4}/32`;

function digest(containerID: string, ifName: string): Buffer {
  return createHash('sha256').update(`${containerID}/${ifName}`).digest();
}

/**
 * The host veth of a pod interface: `flock` + the first 8 hex digits of
 * sha256("<containerID>/<ifName>") — 13 characters, under the kernel's 15. The interface name
 * is part of the key so that a pod with several flock interfaces gets one veth each.
 */
export function hostVethName(containerID: string, ifName: string): string {
  const key = `${containerID}/${ifName}`;
  let name = vethNames.get(key);
  if (name === undefined) {
    name = HOST_VETH_PREFIX + digest(containerID, ifName).subarray(0, 4).toString('hex');
    // Policy passes and the sweeps name every local pod's veth each time (a sort compared
    // them pairwise): a sha256 apiece was 7 % of the agent's main-thread CPU in the CNI bench.
    // Bounded: cleared whole when full (a node has far fewer pods than this).
    if (vethNames.size >= VETH_NAME_CACHE) vethNames.clear();
    vethNames.set(key, name);
  }
  return name;
}
const VETH_NAME_CACHE = 4096;
const vethNames = new Map<string, string>();

function macOf(bytes: Buffer): string {
  const b = Buffer.from(bytes);
  // Locally administered (bit 1 set), unicast (bit 0 clear).
  b[0] = ((b[0] ?? 0) & 0xfc) | 0x02;
  return [...b].map((x) => x.toString(16).padStart(2, '0')).join(':');
}

/**
 * Deterministic MACs of both veth ends, from digest bytes that the name does not use. Knowing
 * the host MAC before the veth exists lets the pod's gateway neighbours go into the same batch,
 * and it proves ownership: teardown only deletes a veth whose MAC is the one derived here.
 */
export function vethMacs(containerID: string, ifName: string): { hostMac: string; podMac: string } {
  const d = digest(containerID, ifName);
  const hostMac = macOf(d.subarray(4, 10));
  let podMac = macOf(d.subarray(10, 16));
  if (podMac === hostMac) podMac = macOf(d.subarray(16, 22));
  return { hostMac, podMac };
}
