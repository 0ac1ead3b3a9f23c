// The chart's peer relay (peerRelay.*): off by default; on, a Deployment on the host network
// with its Service, RBAC that reads PeerSlices and reviews tokens only, and the agents pointed at
// it with the CA (not the key); the certificate the chart makes verifies for the name the
// agents check, against that CA (openssl).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '@flock/exec';
import { describe, expect, it } from 'vitest';
import { NAMESPACE, TESTDATA, container, find, podSpec, render } from './support.js';

const agentArgs = (objects: Awaited<ReturnType<typeof render>>, name = 'flock-agent') =>
  container(podSpec(objects, 'DaemonSet', name).containers, 'agent').args ?? [];

describe('the peer relay in the chart', () => {
  it('is off by default: no relay, no --peer-relay', async () => {
    const objects = await render();
    expect(objects.some((o) => o.metadata.name === 'flock-peer-relay')).toBe(false);
    expect(agentArgs(objects).some((a) => a.startsWith('--peer-relay'))).toBe(false);
    expect(agentArgs(objects)).toContain('--policy-peers=peer-slices');
    // policyPeers: pods has no relay to use, whatever peerRelay says.
    const pods = await render([
      '--set',
      'peerRelay.enabled=true',
      '--set',
      'agent.policyPeers=pods',
    ]);
    expect(pods.some((o) => o.metadata.name === 'flock-peer-relay')).toBe(false);
    expect(agentArgs(pods)).toContain('--policy-peers=pods');
  });

  it('on: relays with least privilege, agents pointed at their Service with the CA alone', async () => {
    const objects = await render(['--set', 'peerRelay.enabled=true']);
    const role = find(objects, 'ClusterRole', 'flock-peer-relay') as unknown as {
      rules: { apiGroups: string[]; resources: string[]; verbs: string[] }[];
    };
    expect(role.rules).toEqual([
      { apiGroups: ['flock.fritzlab.net'], resources: ['peerslices'], verbs: ['list', 'watch'] },
      { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
    ]);
    // Replicas by node count: the operator's leader writes them, to this Deployment alone.
    const deployment = find(objects, 'Deployment', 'flock-peer-relay') as unknown as {
      spec: { replicas?: number };
    };
    expect(deployment.spec.replicas).toBeUndefined();
    expect(
      container(podSpec(objects, 'Deployment', 'flock-operator').containers, 'operator').args,
    ).toEqual(
      expect.arrayContaining([
        '--peer-relay-deployment=flock-peer-relay',
        '--peer-relay-nodes-per-replica=200',
        '--peer-relay-min-replicas=2',
      ]),
    );
    const scale = find(objects, 'Role', 'flock-peer-relay-scale') as unknown as {
      rules: unknown[];
    };
    expect(scale.rules).toEqual([
      {
        apiGroups: ['apps'],
        resources: ['deployments'],
        resourceNames: ['flock-peer-relay'],
        verbs: ['get', 'patch'],
      },
    ]);
    expect(find(objects, 'RoleBinding', 'flock-peer-relay-scale')).toMatchObject({
      subjects: [{ kind: 'ServiceAccount', name: 'flock-operator' }],
    });
    const relay = podSpec(objects, 'Deployment', 'flock-peer-relay');
    expect(relay.serviceAccountName).toBe('flock-peer-relay');
    expect(container(relay.containers, 'relay').args).toContain(
      `--allow-users=system:serviceaccount:${NAMESPACE}:flock-agent`,
    );
    const service = find(objects, 'Service', 'flock-peer-relay') as unknown as {
      spec: { clusterIP: string; ports: { port: number }[] };
    };
    expect(service.spec.clusterIP).toBe('None');
    expect(service.spec.ports[0]?.port).toBe(5474);
    const args = agentArgs(objects);
    expect(args).toContain(`--peer-relay=${NAMESPACE}/flock-peer-relay`);
    expect(args.find((a) => a.startsWith('--reserved-host-ports='))).toBe(
      '--reserved-host-ports=9902/tcp,5474/tcp,9903/tcp',
    );
    const volume = podSpec(objects, 'DaemonSet', 'flock-agent').volumes.find(
      (v) => v.name === 'peer-relay-ca',
    ) as unknown as { secret: { secretName: string; items: { key: string }[] } };
    expect(volume.secret).toEqual({
      secretName: 'flock-peer-relay-tls',
      items: [{ key: 'ca.crt', path: 'ca.crt' }],
    });
    // A Secret named in the values is used, not made; without autoscale, the replicas given
    // (the operator still writes them: helm never owns spec.replicas).
    const named = await render(['-f', join(TESTDATA, 'custom-values.yaml')]);
    expect(named.some((o) => o.kind === 'Secret')).toBe(false);
    expect(
      (find(named, 'Deployment', 'edge-flock-peer-relay') as unknown as { spec: object }).spec,
    ).not.toHaveProperty('replicas');
    expect(
      container(podSpec(named, 'Deployment', 'edge-flock-operator').containers, 'operator').args,
    ).toEqual(
      expect.arrayContaining([
        '--peer-relay-deployment=edge-flock-peer-relay',
        '--peer-relay-min-replicas=1',
        '--peer-relay-max-replicas=1',
      ]),
    );
    expect(agentArgs(named, 'edge-flock-agent')).toContain(
      `--peer-relay=${NAMESPACE}/edge-flock-peer-relay`,
    );
  });

  it('makes a certificate that verifies for <name>.<namespace>.svc against its CA', async () => {
    const objects = await render(['--set', 'peerRelay.enabled=true']);
    const secret = find(objects, 'Secret', 'flock-peer-relay-tls') as unknown as {
      data: Record<string, string>;
    };
    const dir = mkdtempSync(join(tmpdir(), 'flock-relay-cert-'));
    try {
      for (const key of ['ca.crt', 'tls.crt', 'tls.key'])
        writeFileSync(join(dir, key), Buffer.from(secret.data[key] ?? '', 'base64'));
      const name = `flock-peer-relay.${NAMESPACE}.svc`;
      const ok = await run('openssl', [
        ...['verify', '-CAfile', join(dir, 'ca.crt'), '-verify_hostname', name],
        join(dir, 'tls.crt'),
      ]);
      expect(ok.stdout).toContain(': OK');
      const other = await run(
        'openssl',
        [
          ...['verify', '-CAfile', join(dir, 'ca.crt'), '-verify_hostname', 'evil.example'],
          join(dir, 'tls.crt'),
        ],
        { okCodes: [0, 2] },
      );
      expect(other.code).toBe(2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
