// The churn: pods changing at a steady rate, as kubelets and controllers change them —
// alternately a status write (the Ready condition's lastTransitionTime, through pods/status as
// the kubelet writes it) and a label change. Each write stamps the pod with its number and the
// time it was sent (WRITTEN_AT), which every watcher turns into a lag when it sees the event; a
// label change carries the same mark in the label's value (FLIP_LABEL), which is what a watcher
// of PeerSlices sees of it (a status write changes nothing policy reads: no slice changes).
import { performance } from 'node:perf_hooks';
import { PODS, PatchStrategy, objectPath, type KubeTransport } from '@flock/kube';
import { FLIP_LABEL, WRITTEN_AT, flipMark, nowMs } from './counting-transport.js';
import type { PodRef } from './populate.js';

export interface ChurnPlan {
  /** Writes per second. */
  rate: number;
  seconds: number;
  /** Most writes in flight: when the API server falls behind, the rate drops (reported). */
  concurrency: number;
  /** The first write's number (numbers never repeat within a run). */
  firstWrite: number;
}

export interface ChurnResult {
  /** Write numbers [from, to). */
  from: number;
  to: number;
  /** Wall seconds from the first write sent to the last one answered. */
  seconds: number;
  /** Numbers of the writes the API server refused or did not answer. */
  failed: Set<number>;
}

function write(api: KubeTransport, pod: PodRef, n: number): Promise<unknown> {
  const at = nowMs();
  const annotations = { [WRITTEN_AT]: `${n}@${at.toFixed(3)}` };
  if (n % 2 === 0)
    return api.request({
      method: 'PATCH',
      path: objectPath(PODS, pod.name, pod.namespace, 'status'),
      contentType: PatchStrategy.StrategicMergePatch,
      body: {
        metadata: { annotations },
        status: {
          conditions: [
            { type: 'Ready', status: 'True', lastTransitionTime: new Date().toISOString() },
          ],
        },
      },
    });
  return api.request({
    method: 'PATCH',
    path: objectPath(PODS, pod.name, pod.namespace),
    contentType: PatchStrategy.MergePatch,
    body: { metadata: { labels: { [FLIP_LABEL]: flipMark(n, at) }, annotations } },
  });
}

export async function churn(
  api: KubeTransport,
  pods: readonly PodRef[],
  plan: ChurnPlan,
): Promise<ChurnResult> {
  if (pods.length === 0) throw new Error('no pods to change');
  const total = Math.max(1, Math.round(plan.rate * plan.seconds));
  let sent = 0;
  const failed = new Set<number>();
  const pending = new Set<Promise<void>>();
  const t0 = performance.now();
  while (sent < total) {
    // Writes due by now, sent at most `concurrency` at a time.
    const due = Math.min(total, Math.floor(((performance.now() - t0) / 1000) * plan.rate) + 1);
    while (sent < due && pending.size < plan.concurrency) {
      const n = plan.firstWrite + sent++;
      const pod = pods[Math.floor(Math.random() * pods.length)] as PodRef;
      const p: Promise<void> = write(api, pod, n).then(
        () => undefined,
        () => void failed.add(n),
      );
      pending.add(p);
      void p.finally(() => pending.delete(p));
    }
    if (sent < due)
      await Promise.race(pending); // all in flight: the next answer frees one
    else {
      const nextDue = t0 + (sent / plan.rate) * 1000;
      await new Promise((r) => setTimeout(r, Math.max(1, nextDue - performance.now())));
    }
  }
  await Promise.all(pending);
  return {
    from: plan.firstWrite,
    to: plan.firstWrite + total,
    seconds: (performance.now() - t0) / 1000,
    failed,
  };
}
