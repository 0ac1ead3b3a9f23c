// What the rendered workloads promise, stated once (the golden files hold every byte; this says
// which bytes matter): the operator's replicas, probes and non-root user; the agent's host
// network, priority, tolerations, host paths, and BIRD sharing the control-socket directory.
import { beforeAll, describe, expect, it } from 'vitest';
import { container, find, podSpec, render, type K8sObject } from './support.js';

let objects: K8sObject[];

beforeAll(async () => {
  objects = await render();
});

const spec = (kind: string, name: string) =>
  (
    find(objects, kind, name) as unknown as {
      spec: { template: { spec: Record<string, unknown> } };
    }
  ).spec.template.spec;

describe('operator Deployment', () => {
  it('runs two non-root replicas with leader election, probes, resources and a PDB', () => {
    const d = find(objects, 'Deployment', 'flock-operator') as unknown as {
      spec: { replicas: number };
    };
    expect(d.spec.replicas).toBe(2);
    const pod = spec('Deployment', 'flock-operator');
    expect(pod['securityContext']).toMatchObject({ runAsNonRoot: true, runAsUser: 65532 });
    expect(pod['hostNetwork']).toBe(true); // pod networking depends on what it writes
    const c = container(podSpec(objects, 'Deployment', 'flock-operator').containers, 'operator');
    expect(c.args).toEqual(expect.arrayContaining(['--leader-elect=true']));
    expect(c).toMatchObject({
      livenessProbe: { httpGet: { path: '/healthz' } },
      readinessProbe: { httpGet: { path: '/readyz' } },
      resources: { requests: { cpu: '50m' }, limits: { memory: '384Mi' } },
      securityContext: { readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } },
    });
    expect(find(objects, 'PodDisruptionBudget', 'flock-operator')).toMatchObject({
      spec: { minAvailable: 1 },
    });
  });
});

describe('agent DaemonSet', () => {
  it('is node-critical, on the host network, and tolerates nodes that are not ready yet', () => {
    const pod = spec('DaemonSet', 'flock-agent');
    expect(pod['hostNetwork']).toBe(true);
    expect(pod['priorityClassName']).toBe('system-node-critical');
    const keys = (pod['tolerations'] as { key?: string }[]).map((t) => t.key);
    expect(keys).toEqual(
      expect.arrayContaining([
        'node.kubernetes.io/not-ready',
        'node.kubernetes.io/network-unavailable',
      ]),
    );
  });

  it('mounts the host paths it needs and shares BIRD’s socket directory with BIRD', () => {
    const pod = podSpec(objects, 'DaemonSet', 'flock-agent');
    const hostPaths = pod.volumes.flatMap((v) => (v.hostPath ? [v.hostPath.path] : []));
    for (const p of [
      '/etc/flock',
      '/run/flock',
      '/var/lib/flock',
      '/opt/cni/bin',
      '/etc/cni/net.d',
    ])
      expect(hostPaths).toContain(p);
    const agent = container(pod.containers, 'agent');
    const bird = container(pod.containers, 'bird');
    const socketVolume = (c: typeof agent) =>
      c.volumeMounts.find((m) => m.mountPath === '/run/bird')?.name;
    expect(socketVolume(agent)).toBeDefined();
    expect(socketVolume(bird)).toBe(socketVolume(agent));
    expect(pod.initContainers.map((c) => c.name)).toEqual(['host-sysctls', 'install-cni']);
  });

  it("reserves the operator's health port, and the ports the values list, from pods' hostPorts", async () => {
    const reserved = (objects: K8sObject[]) =>
      (
        container(podSpec(objects, 'DaemonSet', 'flock-agent').containers, 'agent').args ?? []
      ).filter((a) => a.startsWith('--reserved-host-ports='));
    expect(reserved(objects)).toEqual(['--reserved-host-ports=9902/tcp']);
    const custom = await render([
      '--set',
      'operator.healthPort=19902',
      '--set',
      'agent.reservedHostPorts={22/tcp,9100-9110/udp}',
    ]);
    expect(reserved(custom)).toEqual(['--reserved-host-ports=19902/tcp,22/tcp,9100-9110/udp']);
  });

  it('gives the agent and BIRD capabilities, not privilege', () => {
    const pod = podSpec(objects, 'DaemonSet', 'flock-agent');
    for (const name of ['agent', 'bird']) {
      const c = container(pod.containers, name) as unknown as {
        securityContext: { privileged?: boolean; capabilities: { drop: string[]; add: string[] } };
      };
      expect(c.securityContext.privileged ?? false).toBe(false);
      expect(c.securityContext.capabilities.drop).toEqual(['ALL']);
      expect(c.securityContext.capabilities.add).not.toContain('SYS_MODULE');
    }
  });
});
