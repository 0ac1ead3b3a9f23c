// Writes the fan-out benchmark's cluster through the API, a bounded number of requests at a
// time: Nodes, namespaces (each with the default ServiceAccount pod admission wants: there is
// no controller-manager to make it), NetworkPolicies, NodeConfigs, then the pods, bound to
// their nodes, and their status (addresses) as a kubelet would report it.
import { performance } from 'node:perf_hooks';
import {
  NAMESPACES,
  NETWORK_POLICIES,
  NODECONFIGS,
  NODES,
  PODS,
  mergePatch,
  resourcePath,
  type KubeTransport,
} from '@flock/kube';
import { eventually } from '@flock/testkit';
import type { FanoutOptions } from './options.js';
import {
  namespaceForCreate,
  namespaceName,
  networkPolicyForCreate,
  node,
  nodeConfigForCreate,
  podForCreate,
  podStatus,
  type PodPlace,
} from './objects.js';

export interface PodRef {
  namespace: string;
  name: string;
}

/** Run task(0..n-1), at most `concurrency` at once; the first failure fails the whole. */
async function inParallel(n: number, concurrency: number, task: (i: number) => Promise<unknown>) {
  let next = 0;
  const worker = async () => {
    while (next < n) await task(next++);
  };
  await Promise.all(Array.from({ length: Math.min(n, concurrency) }, worker));
}

const post = (api: KubeTransport, path: string, body: unknown) =>
  api.request({ method: 'POST', path, body });

/** Create everything; prints what took how long. Resolves with the pods, for the churn. */
export async function populate(api: KubeTransport, o: FanoutOptions): Promise<PodRef[]> {
  const c = o.concurrency;
  const timed = async (what: string, n: number, fn: () => Promise<unknown>) => {
    const t0 = performance.now();
    await fn();
    const s = (performance.now() - t0) / 1000;
    console.log(
      `  ${what}: ${n.toLocaleString('en-US')} in ${s.toFixed(1)} s (${(n / s).toFixed(0)}/s)`,
    );
  };
  await timed('Nodes', o.nodes, () =>
    inParallel(o.nodes, c, (n) => post(api, resourcePath(NODES), node(n))),
  );
  await timed('Namespaces, ServiceAccounts', o.namespaces, () =>
    inParallel(o.namespaces, c, async (n) => {
      await post(api, resourcePath(NAMESPACES), namespaceForCreate(n));
      const sa = `${resourcePath(NAMESPACES, { name: namespaceName(n) })}/serviceaccounts`;
      await post(api, sa, { metadata: { name: 'default' } });
    }),
  );
  const policies = o.namespaces * o.policiesPerNamespace;
  await timed('NetworkPolicies', policies, () =>
    inParallel(policies, c, (i) => {
      const n = i % o.namespaces;
      const ns = namespaceName(n);
      const body = networkPolicyForCreate(n, Math.floor(i / o.namespaces));
      return post(api, resourcePath(NETWORK_POLICIES, { namespace: ns }), body);
    }),
  );
  await timed('NodeConfigs', o.nodes, () =>
    inParallel(o.nodes, c, (n) => post(api, resourcePath(NODECONFIGS), nodeConfigForCreate(n))),
  );
  const total = o.nodes * o.podsPerNode;
  const place = (i: number): PodPlace => ({
    index: i,
    node: i % o.nodes,
    slot: Math.floor(i / o.nodes),
    namespace: namespaceName(i % o.namespaces),
  });
  const pods: PodRef[] = [];
  const createPod = async (i: number) => {
    const p = podForCreate(place(i));
    await post(api, resourcePath(PODS, { namespace: p.metadata.namespace }), p);
    pods[i] = { namespace: p.metadata.namespace, name: String(p.metadata['name']) };
  };
  await timed('Pods (bound, Pending)', total, async () => {
    // A namespace's first pod waits until admission has seen its new ServiceAccount.
    const first = Math.min(total, o.namespaces);
    await inParallel(first, c, (i) =>
      eventually(`pod ${i} created`, () => createPod(i).then(() => true)),
    );
    await inParallel(total - first, c, (i) => createPod(first + i));
  });
  await timed('Pod statuses (addresses, Running)', total, () =>
    inParallel(total, c, (i) => {
      const ref = pods[i] as PodRef;
      return mergePatch(
        api,
        PODS,
        ref.name,
        ref.namespace,
        { status: podStatus(place(i)) },
        {
          subresource: 'status',
        },
      );
    }),
  );
  return pods;
}
