// The agent's kernel layer ("datapath"): routed pod networking without a bridge.
//
// Each pod interface is one veth pair: host end `flock<8 hex of sha256(containerID/ifName)>`
// (hostVethName), pod end created directly inside the pod's namespace (no move, no flush).
// Inside the pod: its /128 (nodad: IPAM guarantees uniqueness) and /32 on eth0, no kernel
// link-local (addrgenmode none: no DAD, no router solicitations), anycast addresses on lo,
// default routes via link-local gateways fe80::1 and 169.254.1.1 (plus
// "169.254.1.1 dev eth0"), and permanent neighbour entries for both gateways (the host
// veth's MAC, which is derived from the same hash), so the first packet waits for nothing.
// On the node: the host veth is up with fe80::1/64 (nodad) and 169.254.1.1/32 (scope host:
// it answers ARP, yet the node never uses it as a source), and /128 + /32 routes to the pod
// through it. Routes carry protocol 241 (FLOCK_RT_PROTO; anycast routes 242) so the agent can
// list its own. IPv6 anycast multipath routes go via each pod's /128 (the kernel refuses
// device-only IPv6 multipath nexthops); IPv4 ones are device-only.
//
// Cost of a fresh ADD: two processes, `ip -batch -` on the node and `nsenter --net=PATH ip
// -batch -` in the pod. When the veth already exists (`link add` says EEXIST), both sides are
// read (`ip -N -json`) and only the differences are written; a pass with nothing to fix
// writes nothing. DEL reads the veth first and deletes it only when its MAC is the one
// derived for this pod (a colliding name belongs to another pod), then leftover routes.
// Errors are DatapathError with the failing step. IprouteDatapath is the real implementation
// (hostNetns runs its node side in a test namespace); FakeDatapath is the same logic over an
// in-memory kernel for unit tests, held to the real one by the contract tests.
export * from './types.js';
export {
  FLOCK_ANYCAST_RT_PROTO,
  FLOCK_RT_PROTO,
  GATEWAY4,
  GATEWAY6,
  HOST_VETH_PREFIX,
  hostVethName,
  vethMacs,
} from './naming.js';
export { FlockDatapath, HOST_SYSCTLS, type DatapathLogger } from './datapath.js';
export { IprouteDatapath } from './iproute.js';
export type { Runner } from './iproute-kernel.js';
