// The peer relay on a lab installed by helm (helm.cluster.test.ts): turned on by `helm upgrade`,
// the agents read remote peers from it; a NetworkPolicy across nodes follows a label change of
// the remote pod through it; the relays scaled to none, the agents watch the PeerSlices and the
// policy still follows; the relays back, the agents read from them again. Each step is shown by
// the packets (the probe through the policy) and by what the agents log.
import { NETWORK_POLICIES } from '@flock/kube';
import { eventually } from '@flock/testkit';
import { CHART, FLOCK_NAMESPACE, RELEASE, helm, helmSet } from '../core/helm.js';
import type { Lab } from '../core/lab.js';
import { labDeployment } from '../core/plan.js';
import {
  DEPLOYMENTS,
  labKubectl,
  listPods,
  podNetns,
  waitForPods,
  type LabPod,
} from '../core/workloads.js';
import { probeFrom } from './status.js';

const RELAYS = 'app.kubernetes.io/name=flock-peer-relay';
const NS = 'relay-test';
const FROM_RELAY = 'NetworkPolicy peers come from the peer relay';
const FROM_SLICES = 'no peer relay: NetworkPolicy peers come from the PeerSlices meanwhile';

const ready = (p: LabPod) =>
  (p.status?.containerStatuses ?? []).length > 0 &&
  (p.status?.containerStatuses ?? []).every((c) => c.ready === true);

/** How many times each agent pod has logged `text` (agent container). */
async function logged(lab: Lab, text: string): Promise<number[]> {
  const agents = await listPods(lab, FLOCK_NAMESPACE, 'app.kubernetes.io/name=flock-agent');
  return Promise.all(
    agents.map(async (a) => {
      const r = await labKubectl(lab, [
        'logs',
        '-n',
        FLOCK_NAMESPACE,
        a.metadata.name,
        '-c',
        'agent',
      ]);
      return r.stdout.split('\n').filter((l) => l.includes(text)).length;
    }),
  );
}

async function relayPods(lab: Lab, n: number): Promise<LabPod[]> {
  return eventually(
    `${n} peer relays Ready`,
    async () => {
      const pods = await listPods(lab, FLOCK_NAMESPACE, RELAYS);
      const live = pods.filter((p) => !p.metadata.deletionTimestamp);
      if (live.length !== n || !live.every(ready) || pods.length !== n)
        throw new Error(`${live.filter(ready).length} of ${pods.length} relays Ready`);
      return live;
    },
    { timeoutMs: 180_000, intervalMs: 1_000 },
  );
}

/** `helm upgrade` of the installed release with `values` changed. */
async function upgrade(lab: Lab, values: string[]): Promise<void> {
  await helm(lab.cp!.kubeconfigPath, [
    ...['upgrade', RELEASE, CHART, '--reuse-values'],
    ...helmSet(values),
  ]);
}

/** The client's label flips; the server's policy admits it only while it is `yes`. */
async function setLabel(lab: Lab, pod: LabPod, value: 'yes' | 'no'): Promise<void> {
  await labKubectl(lab, [
    ...['label', 'pod', pod.metadata.name, '-n', NS, `relay-client=${value}`, '--overwrite'],
  ]);
}

export async function peerRelayScenario(lab: Lab, oldAgents: Set<string>): Promise<void> {
  await upgrade(lab, ['peerRelay.enabled=true']);
  // Two relays, one a node: the chart makes the Deployment without replicas (1) and the
  // operator's leader scales it by node count (2 nodes, at least 2); the agents rolled onto
  // --peer-relay.
  const relays = await relayPods(lab, 2);
  if (new Set(relays.map((p) => p.spec.nodeName)).size !== 2)
    throw new Error('two peer relays on one node');
  await eventually(
    'every agent new, Ready, and reading from a relay',
    async () => {
      const agents = await listPods(lab, FLOCK_NAMESPACE, 'app.kubernetes.io/name=flock-agent');
      const fresh = agents.filter((a) => !oldAgents.has(a.metadata.uid!) && ready(a));
      if (fresh.length !== lab.nodes.length || agents.length !== lab.nodes.length)
        throw new Error(`${fresh.length} of ${agents.length} agents new and Ready`);
      const counts = await logged(lab, FROM_RELAY);
      if (!counts.every((c) => c >= 1)) throw new Error(`from the relay: ${counts.join(',')}`);
      return true;
    },
    { timeoutMs: 240_000, intervalMs: 2_000 },
  );

  // A server on one node, a client on the other; the policy admits relay-client=yes.
  const [node0, node1] = lab.plans.map((p) => p.name);
  await labKubectl(lab, ['create', 'namespace', NS]);
  const on = (node: string | undefined) => ({ nodeSelector: { 'kubernetes.io/hostname': node } });
  await lab.apply(
    DEPLOYMENTS,
    labDeployment({ name: 'server', namespace: NS, replicas: 1, podSpec: on(node0) }),
  );
  await lab.apply(
    DEPLOYMENTS,
    labDeployment({ name: 'client', namespace: NS, replicas: 1, podSpec: on(node1) }),
  );
  await lab.apply(NETWORK_POLICIES, {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'server-admits-clients', namespace: NS },
    spec: {
      podSelector: { matchLabels: { app: 'server' } },
      policyTypes: ['Ingress'],
      ingress: [{ from: [{ podSelector: { matchLabels: { 'relay-client': 'yes' } } }] }],
    },
  });
  const [server] = await waitForPods(lab, NS, 'app=server', 1);
  const [client] = await waitForPods(lab, NS, 'app=client', 1);
  const from = await podNetns(lab, client!);
  const target = server!.status!.podIPs![0]!.ip;
  /** The client reaches the server, or not, within 20 s (a label change through the peers). */
  const reaches = async (ok: boolean, why: string) => {
    await eventually(
      why,
      async () => ((await probeFrom(from, target)).ok === ok ? true : undefined),
      { timeoutMs: 20_000, intervalMs: 500 },
    );
    // And stays so (no flap back from a stale source).
    await new Promise((r) => setTimeout(r, 2_000));
    if ((await probeFrom(from, target)).ok !== ok) throw new Error(`${why}: it flapped back`);
  };
  await reaches(false, 'the client (no label) kept out');
  await setLabel(lab, client!, 'yes');
  await reaches(true, 'the labelled client let in, through the relay');

  // No relay (autoscale off, none asked for): each agent watches the PeerSlices itself (after
  // 10 s) and still follows changes.
  await upgrade(lab, ['peerRelay.autoscale.enabled=false', 'peerRelay.replicas=0']);
  await relayPods(lab, 0);
  await eventually(
    'every agent on the PeerSlices',
    async () => {
      const counts = await logged(lab, FROM_SLICES);
      return counts.every((c) => c >= 1) ? true : undefined;
    },
    { timeoutMs: 60_000, intervalMs: 2_000 },
  );
  await setLabel(lab, client!, 'no');
  await reaches(false, 'the unlabelled client kept out, without a relay');
  await setLabel(lab, client!, 'yes');
  await reaches(true, 'the labelled client let in again, without a relay');

  // Relays back (scaled by the operator again): every agent reads from one again, and changes
  // still come through.
  await upgrade(lab, ['peerRelay.autoscale.enabled=true']);
  await relayPods(lab, 2);
  await eventually(
    'every agent back on a relay',
    async () => {
      const counts = await logged(lab, FROM_RELAY);
      return counts.every((c) => c >= 2) ? true : undefined;
    },
    { timeoutMs: 90_000, intervalMs: 2_000 },
  );
  await setLabel(lab, client!, 'no');
  await reaches(false, 'the unlabelled client kept out, through the relay again');
  await labKubectl(lab, ['delete', 'namespace', NS, '--wait=false']);
}
