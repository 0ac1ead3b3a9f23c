// Helpers of the chart's cluster test: reading objects back (only the fields it checks) and
// starting the real operator and agent processes until they report ready, and the agent's token.
import type { HttpTransport } from '@flock/kube';
import { eventually, type ControlPlane } from '@flock/testkit';
import { z } from 'zod';
import { startDaemon, type Daemon } from '../shared/daemon.js';
import { NAMESPACE } from './support.js';

// What the test reads back from the API server: only the fields it looks at, checked.
const Condition = z.looseObject({
  type: z.string(),
  status: z.string(),
  reason: z.string().optional(),
});
export const Read = z.looseObject({
  spec: z.record(z.string(), z.unknown()).default({}),
  status: z
    .looseObject({
      conditions: z.array(Condition).default([]),
      allocations: z.looseObject({ pods: z.number() }).optional(),
    })
    .default({ conditions: [] }),
  items: z.array(z.looseObject({ reason: z.string().optional() })).default([]),
  rules: z.array(z.looseObject({ resourceNames: z.array(z.string()).optional() })).default([]),
});

const tail = (d: Daemon | undefined) => (d?.logs ?? []).slice(-15).join('\n');

/** Start a process; resolves once a log line matches `ready` (rejects if it exits first). */
export async function startUntil(
  file: string,
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
) {
  const d = startDaemon('env', [
    ...Object.entries(env).map(([k, v]) => `${k}=${v}`),
    file,
    ...args,
  ]);
  await eventually(
    `${args[0]} logs ${ready}`,
    async () => {
      if (d.child.exitCode !== null) throw new Error(`exited ${d.child.exitCode}:\n${tail(d)}`);
      return d.logs.some((l) => ready.test(l));
    },
    { timeoutMs: 60_000 },
  );
  return d;
}

/**
 * A token of the agent's ServiceAccount bound to an agent pod on `node`, as the kubelet
 * projects it into the DaemonSet's pods (it names the node: the chart's admission policy
 * reads it). No kubelet runs the pod; the Node object is created if missing.
 */
export async function mintAgentToken(
  cp: ControlPlane,
  admin: HttpTransport,
  node: string,
): ReturnType<ControlPlane['mintServiceAccount']> {
  await admin
    .request({
      method: 'POST',
      path: '/api/v1/nodes',
      body: { apiVersion: 'v1', kind: 'Node', metadata: { name: node } },
    })
    .catch(() => undefined); // already there
  const name = `flock-agent-${node}`;
  const existing = await admin
    .request({ method: 'GET', path: `/api/v1/namespaces/${NAMESPACE}/pods/${name}` })
    .catch(() => undefined);
  const pod = (existing ??
    (await admin.request({
      method: 'POST',
      path: `/api/v1/namespaces/${NAMESPACE}/pods`,
      body: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name },
        spec: {
          nodeName: node,
          serviceAccountName: 'flock-agent',
          containers: [{ name: 'agent', image: 'flock-agent:test' }],
        },
      },
    }))) as { metadata: { name: string; uid: string } };
  return cp.mintServiceAccount(NAMESPACE, 'flock-agent', pod.metadata);
}
