// The upstream ClusterNetworkPolicy CRD the chart installs (clusterNetworkPolicy.crds): the
// network-policy-api files kept unmodified (their checksums recorded), the release the same as
// the conformance suite's, rendered per channel, left out when turned off, kept on uninstall.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cnpCrd, cnpCrdFile, cnpCrdRelease, CNP_CRD_NAME } from '../shared/cnp-crd.js';
import { CHART, find, readRepo, render } from './support.js';

const KEEP = 'helm.sh/resource-policy';

function withoutKeep(o: object): object {
  const copy = structuredClone(o) as { metadata: { annotations: Record<string, string> } };
  delete copy.metadata.annotations[KEEP];
  return copy;
}

describe('the ClusterNetworkPolicy CRD', () => {
  it('is the upstream file of each channel, unmodified (the checksums in VERSION)', () => {
    const version = readFileSync(
      join(CHART, 'crds-upstream', 'network-policy-api', 'VERSION'),
      'utf8',
    );
    for (const channel of ['standard', 'experimental'] as const) {
      const sum = createHash('sha256')
        .update(readFileSync(cnpCrdFile(channel)))
        .digest('hex');
      expect(version).toContain(
        `${sum}  ${channel}/policy.networking.k8s.io_clusternetworkpolicies.yaml`,
      );
      const crd = cnpCrd(channel);
      expect(crd.metadata.annotations['policy.networking.k8s.io/channel']).toBe(channel);
      expect(crd.metadata.annotations['policy.networking.k8s.io/bundle-version']).toBe(
        cnpCrdRelease().version,
      );
    }
  });

  it('is the release of the conformance suite the lab runs (e2e/cnp-conformance/go.mod)', () => {
    const { module, version } = cnpCrdRelease();
    expect(module).toBe('sigs.k8s.io/network-policy-api');
    expect(readRepo('e2e', 'cnp-conformance', 'go.mod')).toMatch(
      new RegExp(
        `^\\s*(require\\s+)?${module.replace(/\./g, '\\.')} ${version.replace(/\./g, '\\.')}$`,
        'm',
      ),
    );
  });

  it('renders by default: the experimental channel, as upstream has it, kept on uninstall', async () => {
    const crd = find(await render(), 'CustomResourceDefinition', CNP_CRD_NAME);
    expect(crd.metadata).toMatchObject({ annotations: { [KEEP]: 'keep' } });
    expect(withoutKeep(crd)).toEqual(cnpCrd('experimental'));
    // Both API versions the release serves (the enforcement may watch either).
    const versions = (crd as unknown as { spec: { versions: { name: string; served: boolean }[] } })
      .spec.versions;
    expect(versions.filter((v) => v.served).map((v) => v.name)).toEqual(['v1alpha2', 'v1beta1']);
  });

  it('renders the standard channel when asked', async () => {
    const objects = await render(['--set', 'clusterNetworkPolicy.crds.channel=standard']);
    expect(withoutKeep(find(objects, 'CustomResourceDefinition', CNP_CRD_NAME))).toEqual(
      cnpCrd('standard'),
    );
  });

  it('is not rendered when turned off', async () => {
    const objects = await render(['--set', 'clusterNetworkPolicy.crds.install=false']);
    expect(objects.filter((o) => o.kind === 'CustomResourceDefinition')).toEqual([]);
  });
});
