// The chart as Helm sees it: lint, rendering compared with golden files (default and
// non-trivial values), the values schema refusing bad input with a readable message, and the
// chart's CRDs equal to what @flock/api generates.
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { run } from '@flock/exec';
import { requireTools } from '@flock/testkit';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { flockConflist } from '@flock/api';
import {
  CHART,
  CNP_CRD_SOURCE,
  GOLDEN,
  REPO,
  TESTDATA,
  UPDATE,
  container,
  find,
  helmTemplate,
  parseObjects,
  podSpec,
  render,
  withoutSource,
} from './support.js';

const CUSTOM = join(TESTDATA, 'custom-values.yaml');

function golden(name: string, text: string): void {
  const file = join(GOLDEN, name);
  if (UPDATE || !existsSync(file)) {
    mkdirSync(GOLDEN, { recursive: true });
    writeFileSync(file, text);
    if (!UPDATE) throw new Error(`golden file ${file} was missing: written, review it`);
  }
  expect(text, `${name} differs: review, then UPDATE_GOLDEN=1 to accept`).toBe(
    readFileSync(file, 'utf8'),
  );
}

/** Run helm expecting failure; resolves with its stderr. */
async function helmFails(args: string[]): Promise<string> {
  try {
    await run('helm', args, { timeoutMs: 60_000 });
  } catch (e) {
    return String((e as { stderr?: string }).stderr ?? (e as Error).message);
  }
  throw new Error(`helm ${args.join(' ')} succeeded; it should have failed`);
}

describe('helm lint and template', () => {
  it('lints clean in strict mode, with default and custom values', async () => {
    requireTools('helm');
    const plain = await run('helm', ['lint', '--strict', CHART]);
    expect(plain.stdout).toContain('0 chart(s) failed');
    const custom = await run('helm', ['lint', '--strict', CHART, '-f', CUSTOM]);
    expect(custom.stdout).toContain('0 chart(s) failed');
  });

  it('renders the defaults as in the golden file', async () => {
    const text = await helmTemplate();
    golden('default.yaml', withoutSource(text, CNP_CRD_SOURCE));
    const objects = parseObjects(text);
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`).sort()).toEqual([
      'ClusterRole/flock-agent',
      'ClusterRole/flock-operator',
      'ClusterRoleBinding/flock-agent',
      'ClusterRoleBinding/flock-operator',
      'ConfigMap/flock-cni',
      'ConfigMap/flock-dashboard',
      // The upstream ClusterNetworkPolicy CRD (cnp-crd.test.ts).
      'CustomResourceDefinition/clusternetworkpolicies.policy.networking.k8s.io',
      'DaemonSet/flock-agent',
      'DaemonSet/flock-bfd',
      'Deployment/flock-operator',
      'PodDisruptionBudget/flock-operator',
      // No BGP password Secrets named: no Role on Secrets at all.
      'Role/flock-operator-leader-election',
      'RoleBinding/flock-operator-leader-election',
      'ServiceAccount/flock-agent',
      'ServiceAccount/flock-operator',
      // The agent changes only its own node's status (agent-admission.yaml).
      'ValidatingAdmissionPolicy/flock-agent-own-node',
      'ValidatingAdmissionPolicyBinding/flock-agent-own-node',
    ]);
    expect(find(objects, 'Deployment', 'flock-operator')).toMatchObject({
      spec: { replicas: 2 },
    });
    // The Node label flock documents: "false" keeps the agent (and flock's CNI) off a node.
    expect(find(objects, 'DaemonSet', 'flock-agent')).toMatchObject({
      spec: {
        template: {
          spec: {
            affinity: {
              nodeAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: {
                  nodeSelectorTerms: [
                    {
                      matchExpressions: [
                        { key: 'flock.fritzlab.net/agent', operator: 'NotIn', values: ['false'] },
                      ],
                    },
                  ],
                },
              },
            },
          },
        },
      },
    });
  });

  it('runs BFD in a speaker DaemonSet of its own (OnDelete, no API access), or in the agent when off', async () => {
    const on = parseObjects(await helmTemplate());
    const speaker = find(on, 'DaemonSet', 'flock-bfd') as unknown as {
      spec: { updateStrategy: { type: string }; template: { spec: Record<string, unknown> } };
    };
    expect(speaker.spec.updateStrategy.type).toBe('OnDelete');
    expect(speaker.spec.template.spec).toMatchObject({
      hostNetwork: true,
      automountServiceAccountToken: false,
    });
    const bfdArgs = [
      '--bfd-config=/run/flock/bfd/bfd.conf',
      '--bfd-socket=/run/flock/bfd/bird.ctl',
    ];
    const agentArgs = (objects: ReturnType<typeof parseObjects>) =>
      container(podSpec(objects, 'DaemonSet', 'flock-agent').containers, 'agent').args ?? [];
    expect(agentArgs(on)).toEqual(expect.arrayContaining(bfdArgs));
    const off = parseObjects(await helmTemplate(['--set', 'bfdSpeaker.enabled=false']));
    expect(off.some((o) => o.kind === 'DaemonSet' && o.metadata.name === 'flock-bfd')).toBe(false);
    expect(agentArgs(off).filter((a) => a.startsWith('--bfd-'))).toEqual([]);
  });

  it('renders non-trivial values as in the golden file, and they take effect', async () => {
    const text = await helmTemplate(['-f', CUSTOM]);
    golden('custom.yaml', text);
    const objects = parseObjects(text);
    expect(objects.some((o) => o.kind === 'CustomResourceDefinition')).toBe(false);
    // One replica: no PodDisruptionBudget (it would block every drain).
    expect(objects.some((o) => o.kind === 'PodDisruptionBudget')).toBe(false);
    expect(find(objects, 'Pool', 'lab')).toMatchObject({ spec: { bgp: { asn: 64600 } } });
    const agent = podSpec(objects, 'DaemonSet', 'edge-flock-agent');
    // Denied-packet logging is opt-in: the defaults pass no --log-denied at all.
    const plain = podSpec(parseObjects(await helmTemplate()), 'DaemonSet', 'flock-agent');
    expect(
      container(plain.containers, 'agent').args?.some((a) => a.startsWith('--log-denied')),
    ).toBe(false);
    expect(agent.initContainers.map((c) => c.name)).toEqual(['install-cni']);
    expect(container(agent.containers, 'agent').args).toContain('--log-level=debug');
    expect(container(agent.containers, 'agent').args).toContain('--log-denied=4');
    expect(container(agent.containers, 'agent').image).toBe(
      'registry.example/flock-agent@sha256:' + 'a'.repeat(64),
    );
    const role = find(objects, 'Role', 'edge-flock-agent-bgp-secrets') as unknown as {
      rules: { resourceNames?: string[] }[];
    };
    expect(role.rules[0]?.resourceNames).toEqual(['bgp-tor-a', 'bgp-tor-b']);
  });

  it('refuses bad values with the key and what was expected', async () => {
    const cases: [string[], RegExp[]][] = [
      [
        ['--set', 'operator.replicas=two'],
        [/\/operator\/replicas/, /want integer/],
      ],
      [
        ['--set', 'agent.logLevel=loud'],
        [/\/agent\/logLevel/, /one of 'error', 'warn'/],
      ],
      [['--set', 'operator.replicaCount=2'], [/'replicaCount' not allowed/]],
      [
        ['--set', 'agent.resync=soon'],
        [/\/agent\/resync/, /does not match pattern/],
      ],
      [['--set', 'operator.image.digest=sha256:xyz'], [/\/operator\/image\/digest/]],
      [['--set', 'agent.extraArgs={oops}'], [/\/agent\/extraArgs\/0/]],
      [['--set', 'bfdSpeaker.updateStrategy=Never'], [/\/bfdSpeaker\/updateStrategy/]],
      // flock's own entry is the chart's, always the first: not a chained plugin.
      [['--set-json', 'cni.chainedPlugins=[{"type":"flock"}]'], [/\/cni\/chainedPlugins\/0\/type/]],
      [
        ['--set-json', 'cni.chainedPlugins=[{"capabilities":{"bandwidth":true}}]'],
        [/\/cni\/chainedPlugins\/0/, /missing property 'type'/],
      ],
    ];
    for (const [args, patterns] of cases) {
      const stderr = await helmFails(['template', 'flock', CHART, ...args]);
      expect(stderr).toContain("values don't meet the specifications of the schema");
      for (const p of patterns) expect(stderr, args.join(' ')).toMatch(p);
    }
  });
});

describe('the CNI network configuration', () => {
  /** The conflist install-cni writes, from the chart's ConfigMap, and the agents' checksum of it. */
  async function conflistOf(args: string[], prefix = 'flock') {
    const objects = await render(args);
    const cm = find(objects, 'ConfigMap', `${prefix}-cni`) as unknown as {
      data: Record<string, string>;
    };
    const ds = find(objects, 'DaemonSet', `${prefix}-agent`) as unknown as {
      spec: { template: { metadata: { annotations: Record<string, string> } } };
    };
    return {
      conflist: JSON.parse(cm.data['10-flock.conflist']!) as unknown,
      checksum: ds.spec.template.metadata.annotations['checksum/cni-conflist'],
    };
  }

  it('is flockConflist() of @flock/api, with cni.chainedPlugins after flock', async () => {
    const plain = await conflistOf([]);
    expect(plain.conflist).toEqual(flockConflist());
    const custom = await conflistOf(['-f', CUSTOM], 'edge-flock');
    const chained = (parse(readFileSync(CUSTOM, 'utf8')) as { cni: { chainedPlugins: [] } }).cni
      .chainedPlugins;
    expect(chained.length).toBeGreaterThan(0);
    expect(custom.conflist).toEqual(flockConflist({ chained }));
    // A changed conflist rolls the agents (install-cni writes it when an agent pod starts).
    expect(plain.checksum).toMatch(/^[0-9a-f]{16}$/);
    expect(custom.checksum).not.toBe(plain.checksum);
  });
});

describe('CRDs', () => {
  it('are exactly what @flock/api generates (the same files as crds/)', async () => {
    const generator = join(REPO, 'packages', 'api', 'dist', 'src', 'crd', 'generate.js');
    const crds = join(CHART, 'crds');
    if (UPDATE) await run(process.execPath, [generator, crds]);
    const check = await run(process.execPath, [generator, crds, '--check']).then(
      () => '',
      (e: { stderr?: string }) => e.stderr ?? 'failed',
    );
    expect(check, 'run `nx run api:generate-crds` to regenerate').toBe('');
    const files = readdirSync(crds).sort();
    expect(files).toEqual([
      'flock.fritzlab.net_addressclaims.yaml',
      'flock.fritzlab.net_nodeconfigs.yaml',
      'flock.fritzlab.net_nodepeers.yaml',
      'flock.fritzlab.net_peerslices.yaml',
      'flock.fritzlab.net_pools.yaml',
    ]);
    for (const f of files)
      expect(readFileSync(join(crds, f), 'utf8')).toBe(readFileSync(join(REPO, 'crds', f), 'utf8'));
  });
});
