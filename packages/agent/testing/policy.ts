// Shared by the policy unit tests: Kubernetes-shaped fixtures, store entries, and a recording
// stand-in for the nft kernel call (NftRun). NftApplier runs for real on top of it; its real
// twin, nftRunner in a namespace, is tested in nft.kernel.test.ts.
import { silentLogger, type Pod } from '@flock/api';
import { pod as buildPod } from '@flock/api/testing';
import type { AllocationEntry } from '../src/store/index.js';
import type { Cache, KubeTransport } from '@flock/kube';
import type { NftRun } from '@flock/netpol';
import { FakeNftKernel } from '@flock/netpol/testing';
import { clusterPodCache } from '../src/node/pods.js';
import { entry as storeEntry } from './routing-fixtures.js';

const podCaches: Cache<Pod>[] = [];

/** The agent's pod cache, started as the agent starts it (the reconciler does not own it). */
export function startedPods(api: KubeTransport): Cache<Pod> {
  const pods = clusterPodCache(api, silentLogger);
  pods.start();
  podCaches.push(pods);
  return pods;
}

/** Stop what startedPods started (afterEach). */
export async function stopPods(): Promise<void> {
  await Promise.all(podCaches.splice(0).map((c) => c.stop()));
}

/** A committed store entry of pod `name` in namespace shop. */
export function entry(
  name: string,
  ip6: string,
  over: Partial<AllocationEntry> = {},
): AllocationEntry {
  return storeEntry(name, { containerID: `ctr-${name}`, namespace: 'shop', ip6, ...over });
}

/** A running pod of namespace shop (unscheduled: on no node), with one container `main`. */
export function pod(
  name: string,
  labels: Record<string, string>,
  ips: string[],
  over: { namespace?: string; uid?: string; ports?: { name: string; port: number }[] } = {},
): Pod {
  return buildPod({
    name,
    namespace: over.namespace ?? 'shop',
    uid: over.uid,
    labels,
    podIPs: ips,
    ports: over.ports ?? [],
    nodeName: undefined,
  });
}

export function namespace(name: string, labels: Record<string, string> = {}) {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } };
}

export function networkPolicy(ref: string, spec: Record<string, unknown>) {
  const [namespace, name] = ref.split('/') as [string, string];
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name, namespace, uid: `uid-np-${name}` },
    spec,
  };
}

/** An isolation policy: ingress to `app=<to>` only from `app=<from>`. */
export const allowFrom = (ref: string, to: string, from: string) =>
  networkPolicy(ref, {
    podSelector: { matchLabels: { app: to } },
    ingress: [{ from: [{ podSelector: { matchLabels: { app: from } } }] }],
  });

/**
 * The nft kernel call, recorded: scripts in order (full replaces and diffs), overlap detection,
 * failures and pauses; the scripts run against netpol's FakeNftKernel, which refuses a diff that
 * does not fit the table in force.
 */
export class RecordingNft {
  readonly scripts: string[] = [];
  readonly kernel = new FakeNftKernel();
  running = 0;
  maxRunning = 0;
  /** The next calls fail with this error (until cleared). */
  failWith: Error | undefined;
  /** While set, calls wait for it (to hold an apply in progress). */
  gate: Promise<void> | undefined;

  readonly run: NftRun = async (script) => {
    this.running++;
    this.maxRunning = Math.max(this.maxRunning, this.running);
    try {
      await this.gate;
      await new Promise((r) => setTimeout(r, 1));
      if (this.failWith) throw this.failWith;
      this.kernel.execute(script);
      this.scripts.push(script);
    } finally {
      this.running--;
    }
  };

  /** The table in force, as a full script ('' when none). */
  get last(): string {
    return this.kernel.listing();
  }
}

/** The host veth's elements in the table (a full script): in pod_ifaces, and its source addresses. */
export const hasPod = (script: string, veth: string) => script.includes(`"${veth}"`);
export const isolatedForIngress = (script: string, veth: string) =>
  script.includes(`"${veth}" : jump ingress_${veth}`);
