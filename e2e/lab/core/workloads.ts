// Workloads in the lab: the Deployment resource and waiting for pods to run with addresses.
import { setTimeout as delay } from 'node:timers/promises';
import { run, type RunOptions } from '@flock/exec';
import { DEPLOYMENTS, NAMESPACES, NETWORK_POLICIES, SERVICES } from '@flock/kube';
import type { Lab } from './lab.js';
import {
  sampleAnycast,
  sampleDeployment,
  samplePinned,
  samplePolicies,
  sampleShopDeployments,
  SHOP_NAMESPACES,
  UNREADY_FILE,
} from './plan.js';
import { PodList, isPodReady, type LabPod } from './pod-list.js';
import { lbService } from './services.js';

export type { LabPod } from './pod-list.js';

export { SERVICES } from '@flock/kube';

/** A ClusterIP Service on the workload's HTTP port, for the pods labelled app=APP. */
export function labService(name: string, app: string, namespace = 'default'): object {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace },
    spec: { selector: { app }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
  };
}

/** The sample LoadBalancer Service: the `web` pods on the workload port, an address from flock. */
export const SAMPLE_LB = 'web-lb';
export const sampleLoadBalancer = () => lbService(SAMPLE_LB, 'web');

/** The Service's ClusterIP once it has endpoints ready. */
export async function serviceIp(lab: Lab, name: string, namespace = 'default'): Promise<string> {
  const svc = (await lab.api!.request({
    method: 'GET',
    path: `/api/v1/namespaces/${namespace}/services/${name}`,
  })) as { spec?: { clusterIP?: string } };
  const ip = svc.spec?.clusterIP;
  if (!ip) throw new Error(`service ${namespace}/${name} has no ClusterIP`);
  return ip;
}

export { DEPLOYMENTS };

export async function listPods(lab: Lab, namespace: string, selector: string): Promise<LabPod[]> {
  const raw = await lab.api!.request({
    method: 'GET',
    path: `/api/v1/namespaces/${namespace}/pods`,
    query: { labelSelector: selector },
  });
  return PodList.parse(raw).items;
}

/** Wait until `count` pods match and all run with a public address. */
const isRunning = (p: LabPod) =>
  p.status?.phase === 'Running' && (p.status.podIPs ?? []).length > 0;

/** Until `count` pods match `selector` and every one of them is Running with its addresses. */
export function waitForPods(
  lab: Lab,
  namespace: string,
  selector: string,
  count: number,
  timeoutMs = 120_000,
): Promise<LabPod[]> {
  return waitUntilAll(lab, namespace, selector, count, timeoutMs, 'running', isRunning);
}

/**
 * waitForPods, and every one of them Ready too: Running only means the containers started,
 * and a workload that is not listening yet refuses connections (under load agnhost takes
 * seconds).
 */
export function waitForReadyPods(
  lab: Lab,
  namespace: string,
  selector: string,
  count: number,
  timeoutMs = 120_000,
): Promise<LabPod[]> {
  return waitUntilAll(
    lab,
    namespace,
    selector,
    count,
    timeoutMs,
    'Ready',
    (p) => isRunning(p) && isPodReady(p),
  );
}

async function waitUntilAll(
  lab: Lab,
  namespace: string,
  selector: string,
  count: number,
  timeoutMs: number,
  what: string,
  done: (p: LabPod) => boolean,
): Promise<LabPod[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pods = await listPods(lab, namespace, selector);
    const ok = pods.filter(done);
    if (ok.length >= count && pods.length === ok.length) return ok;
    if (Date.now() > deadline)
      throw new Error(
        `${ok.length} of ${count} pods (${selector}) ${what}: ${pods.map((p) => `${p.metadata.name}=${p.status?.phase}${done(p) ? '' : ` (not ${what})`}`).join(', ')}`,
      );
    await delay(500);
  }
}

/** The pods the samples run, by namespace and selector, for waiting on them. */
export function sampleSelectors(
  nodes: number,
): { namespace: string; selector: string; count: number }[] {
  return [
    { namespace: 'default', selector: 'app=web', count: nodes },
    { namespace: 'default', selector: 'app=anycast', count: Math.min(2, nodes) },
    { namespace: 'default', selector: 'app=pinned', count: 1 },
    { namespace: 'shop', selector: 'app=shop', count: 1 },
    { namespace: 'frontend', selector: 'app=frontend', count: 1 },
    { namespace: 'outsider', selector: 'app=outsider', count: 1 },
  ];
}

/**
 * Apply every sample (docs/lab.md): Deployment `web` (one pod per node) behind the LoadBalancer
 * Service `web-lb`, the anycast service (two nodes), the pinned pod, and the `shop`
 * NetworkPolicies with a client pod in `frontend` (allowed) and one in `outsider` (denied); then
 * wait until all of them run.
 */
export async function applySamples(lab: Lab, nodes: number): Promise<void> {
  for (const ns of SHOP_NAMESPACES) await lab.apply(NAMESPACES, ns);
  for (const policy of samplePolicies()) await lab.apply(NETWORK_POLICIES, policy);
  await lab.apply(DEPLOYMENTS, sampleDeployment(nodes));
  await lab.apply(DEPLOYMENTS, sampleAnycast(Math.min(2, nodes)));
  await lab.apply(DEPLOYMENTS, samplePinned());
  for (const d of sampleShopDeployments()) await lab.apply(DEPLOYMENTS, d);
  await lab.apply(SERVICES, sampleLoadBalancer());
  for (const s of sampleSelectors(nodes)) await waitForPods(lab, s.namespace, s.selector, s.count);
}

/**
 * A network namespace to run a command in: a named one (the router's), or the one of a process
 * (a pod's: its container's pid on the host, podNetns below).
 */
export type NetnsRef = { netns: string } | { pid: number };

/** The program and arguments that run `file args` inside `ref`. */
export function inNetns(ref: NetnsRef, file: string, args: readonly string[]) {
  return 'netns' in ref
    ? { file: 'ip', args: ['netns', 'exec', ref.netns, file, ...args] }
    : { file: 'nsenter', args: [`--net=/proc/${ref.pid}/ns/net`, '--', file, ...args] };
}

/** The pod's network namespace, as the host pid of its (first) container's task. */
export async function podNetns(lab: Lab, pod: LabPod): Promise<NetnsRef & { pid: number }> {
  const id = pod.status?.containerStatuses?.[0]?.containerID?.replace(/^containerd:\/\//, '');
  if (!id || !pod.spec.nodeName) throw new Error(`pod ${pod.metadata.name} has no container yet`);
  const { stdout } = await lab.node(pod.spec.nodeName).ctr(['tasks', 'ls']);
  const row = stdout.split('\n').find((l) => l.startsWith(`${id} `));
  const pid = Number(row?.trim().split(/\s+/)[1]);
  if (!Number.isInteger(pid) || pid <= 0)
    throw new Error(`no running task for pod ${pod.metadata.name} (${id})`);
  return { pid };
}

/** Run a command inside a pod's network namespace (from the host, as root). */
export async function execInPod(
  lab: Lab,
  pod: LabPod,
  file: string,
  args: string[],
  options?: RunOptions,
) {
  const cmd = inNetns(await podNetns(lab, pod), file, args);
  return run(cmd.file, cmd.args, options);
}

/** kubectl with the lab's admin kubeconfig. */
export function labKubectl(lab: Lab, args: string[], options?: RunOptions) {
  return run('kubectl', ['--kubeconfig', lab.cp!.kubeconfigPath, ...args], {
    timeoutMs: 60_000,
    ...options,
  });
}

/**
 * Make a pod's readiness probe fail (ready=false) or pass again: the workload's exec probe
 * checks UNREADY_FILE (workloadContainer with toggleReady), so this is a real probe failing.
 */
export async function setReady(lab: Lab, pod: LabPod, ready: boolean): Promise<void> {
  const cmd = ready ? ['rm', '-f', UNREADY_FILE] : ['touch', UNREADY_FILE];
  await labKubectl(lab, ['exec', '-n', pod.metadata.namespace, pod.metadata.name, '--', ...cmd]);
}
