// Workloads in the lab: the Deployment resource and waiting for pods to run with addresses.
import { setTimeout as delay } from 'node:timers/promises';
import { z } from 'zod';
import { NAMESPACES, NETWORK_POLICIES, type ResourceRef } from '@flock/kube';
import type { Lab } from './lab.js';
import {
  sampleAnycast,
  sampleDeployment,
  samplePinned,
  samplePolicies,
  sampleShopDeployments,
  SHOP_NAMESPACES,
} from './plan.js';

export const DEPLOYMENTS: ResourceRef = {
  group: 'apps',
  version: 'v1',
  plural: 'deployments',
  kind: 'Deployment',
  namespaced: true,
};

const PodList = z.object({
  items: z.array(
    z.looseObject({
      metadata: z.looseObject({ name: z.string(), namespace: z.string() }),
      spec: z.looseObject({ nodeName: z.string().optional() }),
      status: z
        .looseObject({
          phase: z.string().optional(),
          podIPs: z.array(z.object({ ip: z.string() })).optional(),
        })
        .optional(),
    }),
  ),
});
export type LabPod = z.infer<typeof PodList>['items'][number];

export async function listPods(lab: Lab, namespace: string, selector: string): Promise<LabPod[]> {
  const raw = await lab.api!.request({
    method: 'GET',
    path: `/api/v1/namespaces/${namespace}/pods`,
    query: { labelSelector: selector },
  });
  return PodList.parse(raw).items;
}

/** Wait until `count` pods match and all run with a public address. */
export async function waitForPods(
  lab: Lab,
  namespace: string,
  selector: string,
  count: number,
  timeoutMs = 120_000,
): Promise<LabPod[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pods = await listPods(lab, namespace, selector);
    const running = pods.filter(
      (p) => p.status?.phase === 'Running' && (p.status.podIPs ?? []).length > 0,
    );
    if (running.length >= count && pods.length === running.length) return running;
    if (Date.now() > deadline)
      throw new Error(
        `${running.length} of ${count} pods (${selector}) running: ${pods.map((p) => `${p.metadata.name}=${p.status?.phase}`).join(', ')}`,
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
 * Apply every sample (docs/lab.md): Deployment `web` (one pod per node), the anycast service
 * (two nodes), the pinned pod, and the `shop` NetworkPolicies with a client pod in `frontend`
 * (allowed) and one in `outsider` (denied); then wait until all of them run.
 */
export async function applySamples(lab: Lab, nodes: number): Promise<void> {
  for (const ns of SHOP_NAMESPACES) await lab.apply(NAMESPACES, ns);
  for (const policy of samplePolicies()) await lab.apply(NETWORK_POLICIES, policy);
  await lab.apply(DEPLOYMENTS, sampleDeployment(nodes));
  await lab.apply(DEPLOYMENTS, sampleAnycast(Math.min(2, nodes)));
  await lab.apply(DEPLOYMENTS, samplePinned());
  for (const d of sampleShopDeployments()) await lab.apply(DEPLOYMENTS, d);
  for (const s of sampleSelectors(nodes)) await waitForPods(lab, s.namespace, s.selector, s.count);
}
