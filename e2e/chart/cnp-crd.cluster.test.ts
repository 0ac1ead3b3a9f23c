// How `helm install` treats the ClusterNetworkPolicy CRD on a real API server (etcd and
// kube-apiserver only): it installs the CRD where none is, leaves one it does not own alone (here
// the standard-channel CRD applied as another implementation would), and keeps its own on
// uninstall. The chart's lookup runs only against a cluster, so only this tier can show it.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  helm,
  kubectl,
  requireKernelTier,
  startControlPlane,
  type ControlPlane,
} from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { cnpCrd, CNP_CRD_NAME } from '../shared/cnp-crd.js';
import { CHART } from './support.js';

const Crd = z.looseObject({
  metadata: z.looseObject({
    annotations: z.record(z.string(), z.string()).default({}),
    labels: z.record(z.string(), z.string()).default({}),
  }),
});

let cp: ControlPlane;
let dir: string;

const crd = async () =>
  Crd.parse(
    JSON.parse(
      (await kubectl(cp.kubeconfigPath, ['get', 'crd', CNP_CRD_NAME, '-o', 'json'])).stdout,
    ),
  );
const install = (release: string, ns: string) =>
  helm(cp.kubeconfigPath, ['install', release, CHART, '-n', ns, '--create-namespace'], {
    timeoutMs: 120_000,
  });
const manifestKinds = async (release: string, ns: string) =>
  (await helm(cp.kubeconfigPath, ['get', 'manifest', release, '-n', ns])).stdout
    .split('\n')
    .filter((l) => l.startsWith('kind: '));

beforeAll(async () => {
  requireKernelTier('flock-controlplane', 'helm', 'kubectl');
  cp = await startControlPlane();
  dir = await mkdtemp(join(tmpdir(), 'flock-cnp-crd-'));
}, 300_000);

afterAll(async () => {
  await cp?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the ClusterNetworkPolicy CRD and helm', () => {
  it('installs it where there is none, as the release owns it, to keep on uninstall', async () => {
    await install('one', 'flock-one');
    const c = await crd();
    expect(c.metadata.annotations).toMatchObject({
      'meta.helm.sh/release-name': 'one',
      'meta.helm.sh/release-namespace': 'flock-one',
      'helm.sh/resource-policy': 'keep',
      'policy.networking.k8s.io/channel': 'experimental',
    });
    expect(await manifestKinds('one', 'flock-one')).toContain('kind: CustomResourceDefinition');
  });

  it('a second release leaves the first one’s CRD alone (no failure, not in its manifest)', async () => {
    await install('two', 'flock-two');
    expect((await crd()).metadata.annotations['meta.helm.sh/release-name']).toBe('one');
    expect(await manifestKinds('two', 'flock-two')).not.toContain('kind: CustomResourceDefinition');
  });

  it('uninstalling the owner keeps the CRD', async () => {
    await helm(cp.kubeconfigPath, ['uninstall', 'two', '-n', 'flock-two'], { timeoutMs: 120_000 });
    await helm(cp.kubeconfigPath, ['uninstall', 'one', '-n', 'flock-one'], { timeoutMs: 120_000 });
    expect((await crd()).metadata.annotations['helm.sh/resource-policy']).toBe('keep');
  });

  it('leaves a CRD another implementation installed as it is', async () => {
    await kubectl(cp.kubeconfigPath, ['delete', 'crd', CNP_CRD_NAME, '--wait=true']);
    const file = join(dir, 'standard.json');
    await writeFile(file, JSON.stringify(cnpCrd('standard')));
    await kubectl(cp.kubeconfigPath, ['create', '-f', file]);
    await install('three', 'flock-three');
    const c = await crd();
    expect(c.metadata.annotations['policy.networking.k8s.io/channel']).toBe('standard');
    expect(c.metadata.annotations['meta.helm.sh/release-name']).toBeUndefined();
    expect(await manifestKinds('three', 'flock-three')).not.toContain(
      'kind: CustomResourceDefinition',
    );
  });
});
