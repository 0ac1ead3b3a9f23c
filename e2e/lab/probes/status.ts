// `lab status`: what the lab looks like right now, from its state file — nodes, NodeConfigs and
// pods (kubectl), the routes the router learned, and a TCP check from the router to every pod.
import { z } from 'zod';
import { AgentStatus } from '@flock/agent';
import { run } from '@flock/exec';
import { PodList } from '../core/pod-list.js';
import { labScript, WORKLOAD_PORT } from '../core/plan.js';
import { AGENT_MAIN } from '../node/lab-node.js';
import type { LabState } from '../core/state.js';
import { inNetns, type NetnsRef } from '../core/workloads.js';

const PROBE = labScript('probe');
export { WORKLOAD_PORT } from '../core/plan.js';

/** `flock-agent status -o json` of a node whose agent runs as a process (the lab's default). */
export async function agentStatusOf(node: { socketPath: string }): Promise<AgentStatus> {
  const { stdout } = await run(process.execPath, [
    ...[AGENT_MAIN, 'status', '--socket', node.socketPath, '-o', 'json'],
  ]);
  return AgentStatus.parse(JSON.parse(stdout));
}

export function kubectl(state: LabState, args: string[]) {
  return run('kubectl', ['--kubeconfig', state.kubeconfig, ...args], {
    okCodes: [0, 1],
    timeoutMs: 30_000,
  });
}

/** Connect from the router's namespace to [ip]:port; the reply's first body line, or the error. */
export async function probeFromRouter(state: LabState, ip: string, port = WORKLOAD_PORT) {
  if (!state.router) throw new Error('the lab has no router yet');
  return probeFrom({ netns: state.router }, ip, port);
}

/** Connect from inside a network namespace (a pod's, the router's) to [ip]:port. */
export async function probeFrom(ref: NetnsRef, ip: string, port = WORKLOAD_PORT) {
  const probe = inNetns(ref, process.execPath, [PROBE, ip, String(port)]);
  const r = await run(probe.file, probe.args, { okCodes: [0, 1], timeoutMs: 10_000 });
  const body = r.stdout.split('\r\n\r\n')[1]?.trim();
  return r.code === 0 && body
    ? { ok: true, reply: body }
    : { ok: false, reply: r.stderr.trim() || 'no reply' };
}

/**
 * The workloads' running pods on flock's network and their addresses: not hostNetwork, and not
 * the cluster's own (kube-system: CoreDNS), which serve no workload port.
 */
export async function podAddresses(state: LabState): Promise<{ pod: string; ips: string[] }[]> {
  const { stdout } = await kubectl(state, ['get', 'pods', '-A', '-o', 'json']);
  return PodList.parse(JSON.parse(stdout))
    .items.filter(
      (p) =>
        !p.spec.hostNetwork &&
        p.metadata.namespace !== 'kube-system' &&
        p.status?.phase === 'Running',
    )
    .map((p) => ({
      pod: `${p.metadata.namespace}/${p.metadata.name}`,
      ips: (p.status?.podIPs ?? []).map((i) => i.ip),
    }));
}

export async function routerRoutes(state: LabState): Promise<string> {
  if (!state.router) return '(no router)';
  const lines: string[] = [];
  for (const family of ['-6', '-4']) {
    const r = await run('ip', ['-n', state.router, family, 'route', 'show', 'proto', 'bird']);
    lines.push(r.stdout.trim());
  }
  return lines.filter(Boolean).join('\n') || '(none)';
}

export async function statusReport(state: LabState): Promise<string> {
  const out: string[] = [];
  const section = (title: string, body: string) => out.push(`== ${title}`, body.trimEnd(), '');
  section('nodes', (await kubectl(state, ['get', 'nodes', '-o', 'wide'])).stdout);
  section('nodeconfigs', (await kubectl(state, ['get', 'nodeconfigs'])).stdout);
  section(
    'pods',
    (
      await kubectl(state, [
        'get',
        'pods',
        '-A',
        '-o',
        'custom-columns=POD:.metadata.name,NODE:.spec.nodeName,PHASE:.status.phase,PUBLIC-IPS:.status.podIPs[*].ip',
      ])
    ).stdout,
  );
  section(`router ${state.router ?? ''}: learned routes`, await routerRoutes(state));
  const checks: string[] = [];
  for (const pod of await podAddresses(state)) {
    for (const ip of pod.ips) {
      const r = await probeFromRouter(state, ip);
      checks.push(`${r.ok ? 'ok  ' : 'FAIL'} ${pod.pod} [${ip}]:${WORKLOAD_PORT} -> ${r.reply}`);
    }
  }
  section('router -> pod reachability (TCP)', checks.join('\n') || '(no pods)');
  section(
    'LoadBalancer Services: address, and reachability from the router',
    await loadBalancers(state),
  );
  return out.join('\n');
}

const ServiceList = z.object({
  items: z.array(
    z.looseObject({
      metadata: z.looseObject({ name: z.string(), namespace: z.string() }),
      spec: z.looseObject({
        type: z.string().optional(),
        ports: z.array(z.looseObject({ port: z.number() })).optional(),
      }),
      status: z
        .looseObject({
          loadBalancer: z
            .looseObject({
              ingress: z.array(z.looseObject({ ip: z.string().optional() })).optional(),
            })
            .optional(),
        })
        .optional(),
    }),
  ),
});

/** Every LoadBalancer Service with its addresses, each asked from the router on its first port. */
async function loadBalancers(state: LabState): Promise<string> {
  const { stdout } = await kubectl(state, ['get', 'services', '-A', '-o', 'json']);
  const lines: string[] = [];
  for (const svc of ServiceList.parse(JSON.parse(stdout)).items) {
    if (svc.spec.type !== 'LoadBalancer') continue;
    const who = `${svc.metadata.namespace}/${svc.metadata.name}`;
    const ips = (svc.status?.loadBalancer?.ingress ?? []).flatMap((i) => (i.ip ? [i.ip] : []));
    if (!ips.length) lines.push(`pending ${who} (no address yet)`);
    const port = svc.spec.ports?.[0]?.port ?? WORKLOAD_PORT;
    for (const ip of ips) {
      const r = await probeFromRouter(state, ip, port);
      lines.push(`${r.ok ? 'ok  ' : 'FAIL'} ${who} [${ip}]:${port} -> ${r.reply}`);
    }
  }
  return lines.join('\n') || '(none)';
}
