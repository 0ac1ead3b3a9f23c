// The CNI ADD/DEL candidates the latency bench runs side by side, each invoked the way a
// container runtime invokes a plugin: the executable with CNI_* variables and the network
// configuration on stdin. Every candidate starts inside its own node namespace through the
// same `nsenter --net=<node>` wrapper (the bench never touches the machine's namespace), so
// that exec is in every figure alike.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { run } from '@flock/exec';
import type { Netns } from '@flock/testkit';
import {
  actionTokens,
  batchText,
  freshHostActions,
  freshPodActions,
  hostVethName,
  validatePod,
  vethMacs,
} from '@flock/agent/testing';

export interface Candidate {
  name: string;
  /** ADD pod `i` (its own pod namespace) under container ID `<round>-<i>`; throws on failure. */
  add(i: number, round: string): Promise<void>;
  del(i: number, round: string): Promise<void>;
}

/** One plugin run in the node namespace; rejects on a non-zero exit (a CNI error). */
function invokeIn(node: Netns, file: string, env: Record<string, string>, stdin: string) {
  return run('nsenter', [`--net=${node.path}`, file], { env, input: stdin, timeoutMs: 60_000 });
}

function expectIps(stdout: string, want: number, who: string): string[] {
  const ips = (JSON.parse(stdout) as { ips?: { address?: string }[] }).ips ?? [];
  if (ips.length !== want) throw new Error(`${who}: ADD returned ${ips.length} IPs, want ${want}`);
  return ips.map((ip) => String(ip.address).split('/')[0]!);
}

const cniEnv = (command: string, id: string, netns: string, path: string, args = '') => ({
  CNI_COMMAND: command,
  CNI_CONTAINERID: id,
  CNI_NETNS: netns,
  CNI_IFNAME: 'eth0',
  CNI_ARGS: args,
  CNI_PATH: path,
});

/** flock: the installed launcher + bundle, talking to the real agent over its socket. */
export function flockCandidate(o: {
  node: Netns;
  pods: readonly Netns[];
  binDir: string;
  socketPath: string;
  /** API pod i: name and UID (the agent looks the pod up). */
  pod: (i: number) => { name: string; uid: string };
  /** Called with pod i's addresses after its ADD (the kubelet's status writes). */
  added?: (i: number, ips: string[]) => Promise<void>;
  name?: string;
}): Candidate {
  const conf = JSON.stringify({
    cniVersion: '1.1.0',
    name: 'flock',
    type: 'flock',
    socketPath: o.socketPath,
  });
  const env = (command: string, i: number, round: string) => {
    const p = o.pod(i);
    const args = `K8S_POD_NAMESPACE=default;K8S_POD_NAME=${p.name};K8S_POD_UID=${p.uid}`;
    return {
      ...cniEnv(command, `fl-${round}-${i}`, o.pods[i]!.path, o.binDir, args),
      FLOCK_NODE: process.execPath,
    };
  };
  const launcher = join(o.binDir, 'flock');
  return {
    name: o.name ?? 'flock',
    async add(i, round) {
      const r = await invokeIn(o.node, launcher, env('ADD', i, round), conf);
      const ips = expectIps(r.stdout, 2, 'flock');
      await o.added?.(i, ips);
    },
    async del(i, round) {
      await invokeIn(o.node, launcher, env('DEL', i, round), conf);
    },
  };
}

/** Debian's reference plugins: ptp with host-local IPAM, dual-stack or IPv4 only. */
export async function ptpCandidate(o: {
  name: string;
  node: Netns;
  pods: readonly Netns[];
  dataDir: string;
  cniPath: string;
  ranges: { v6?: string; v4: string };
}): Promise<Candidate> {
  await mkdir(o.dataDir, { recursive: true });
  const ranges = [...(o.ranges.v6 ? [[{ subnet: o.ranges.v6 }]] : []), [{ subnet: o.ranges.v4 }]];
  const routes = [...(o.ranges.v6 ? [{ dst: '::/0' }] : []), { dst: '0.0.0.0/0' }];
  // A network name allows letters, digits, '-', '_' and '.' only.
  const network = o.name.replace(/[^A-Za-z0-9_.-]/g, '-');
  const conf = JSON.stringify({
    cniVersion: '1.0.0',
    name: network,
    type: 'ptp',
    ipMasq: false,
    ipam: { type: 'host-local', dataDir: o.dataDir, ranges, routes },
  });
  const plugin = join(o.cniPath, 'ptp');
  const want = o.ranges.v6 ? 2 : 1;
  const env = (command: string, i: number, round: string) =>
    cniEnv(command, `${network}-${round}-${i}`, o.pods[i]!.path, o.cniPath);
  return {
    name: o.name,
    async add(i, round) {
      const r = await invokeIn(o.node, plugin, env('ADD', i, round), conf);
      expectIps(r.stdout, want, o.name);
    },
    async del(i, round) {
      await invokeIn(o.node, plugin, env('DEL', i, round), conf);
    },
  };
}

/**
 * The floor: flock's own kernel operations for the pod, pre-rendered, run by `ip -batch` with
 * no logic around them — one ip process per namespace (ip addresses one namespace per
 * process: node side, then pod side). DEL is one `ip link del` of the host veth.
 */
export function floorCandidate(o: { node: Netns; pods: readonly Netns[] }): Candidate {
  const spec = (i: number, round: string) => {
    const containerID = `floor-${round}-${i}`;
    return validatePod({
      containerID,
      ifName: 'eth0',
      netns: o.pods[i]!.path,
      hostVeth: hostVethName(containerID, 'eth0'),
      ip6: `2001:db8:300::${(i + 1).toString(16)}`,
      ip4: `100.67.${Math.floor(i / 250)}.${(i % 250) + 1}`,
    });
  };
  const ip = (ns: Netns, input: string) =>
    run('nsenter', [`--net=${ns.path}`, 'ip', '-batch', '-'], { input });
  return {
    name: 'ip -batch floor',
    async add(i, round) {
      const pod = spec(i, round);
      const macs = vethMacs(pod.containerID, pod.ifName);
      // Rendering is part of the timed work: it is microseconds next to the two execs.
      await ip(o.node, batchText(freshHostActions(pod, macs).map(actionTokens)));
      await ip(o.pods[i]!, batchText(freshPodActions(pod, macs.hostMac).map(actionTokens)));
    },
    async del(i, round) {
      await ip(o.node, batchText([['link', 'del', 'dev', spec(i, round).hostVeth]]));
    },
  };
}
