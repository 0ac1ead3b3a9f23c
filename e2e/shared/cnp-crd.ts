// sig-network's ClusterNetworkPolicy CRD as the chart ships it (charts/flock/crds-upstream: the
// upstream network-policy-api file, unmodified). A lab of processes applies it as `helm install`
// would with the chart's defaults, before the agents start; the chart's tests check the copy.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CNP_CRD_NAME, cnpCrdFile, repoRoot } from '@flock/testkit';
import { parse } from 'yaml';
import { z } from 'zod';

// The file and the CRD's name are testkit's (package cluster tests install the same CRD).
export { CNP_CRD_NAME, cnpCrdFile };
const UPSTREAM = join(repoRoot(import.meta.dirname), 'charts', 'flock', 'crds-upstream');

export type CnpChannel = 'standard' | 'experimental';

const Crd = z.looseObject({
  kind: z.literal('CustomResourceDefinition'),
  metadata: z.looseObject({
    name: z.literal(CNP_CRD_NAME),
    annotations: z.record(z.string(), z.string()),
  }),
});
export type CnpCrd = z.infer<typeof Crd>;

export function cnpCrd(channel: CnpChannel = 'experimental'): CnpCrd {
  return Crd.parse(parse(readFileSync(cnpCrdFile(channel), 'utf8')));
}

/** `sigs.k8s.io/network-policy-api v0.3.0`: the first line of crds-upstream/.../VERSION. */
export function cnpCrdRelease(): { module: string; version: string } {
  const line = readFileSync(join(UPSTREAM, 'network-policy-api', 'VERSION'), 'utf8').split(
    '\n',
  )[0]!;
  const [module, version] = line.split(' ');
  return { module: module!, version: version! };
}
