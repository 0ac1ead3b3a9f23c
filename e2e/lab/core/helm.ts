// flock installed on the lab's real nodes the way users install it (docs/install.md): the agent
// and operator images built from images/*/Dockerfile (scripts/build-images.sh) imported into every
// node's containerd, then `helm install flock charts/flock`. The agents and BIRDs then run as the
// chart's DaemonSet, the operator as its Deployment: no flock process runs outside a container.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { run } from '@flock/exec';
import { requireTools } from '@flock/testkit';
import type { LabImage } from '../node/images.js';
import { REPO_ROOT } from './plan.js';

export const CHART = join(REPO_ROOT, 'charts', 'flock');
export const RELEASE = 'flock';
export const FLOCK_NAMESPACE = 'flock-system';
/** What scripts/build-images.sh names its images (it writes them as .cache/images/flock-X.tar). */
export const FLOCK_IMAGES = {
  agent: { repository: 'localhost/flock-agent', tag: 'dev' },
  operator: { repository: 'localhost/flock-operator', tag: 'dev' },
} as const;

/** The two image archives; fails with what to run when they have not been built. */
export function flockImages(): LabImage[] {
  return (['agent', 'operator'] as const).map((x) => {
    const archive = join(REPO_ROOT, '.cache', 'images', `flock-${x}.tar`);
    if (!existsSync(archive))
      throw new Error(`${archive} is missing: run scripts/build-images.sh (./dev setup does)`);
    const { repository, tag } = FLOCK_IMAGES[x];
    return { name: `${repository}:${tag}`, archive };
  });
}

/**
 * `helm ARGS` against the lab's release namespace with `kubeconfig`: the one way the lab runs
 * helm (install, upgrade, uninstall are its ARGS).
 */
export async function helm(kubeconfig: string, args: string[], timeoutMs = 120_000): Promise<void> {
  requireTools('helm');
  await run('helm', [...args, '--namespace', FLOCK_NAMESPACE, '--kubeconfig', kubeconfig], {
    timeoutMs,
  });
}

/** `--set KEY=VALUE` for each of `values`. */
export const helmSet = (values: string[]) => values.flatMap((v) => ['--set', v]);

/** `helm upgrade --install` of the chart with the lab's images and `values` (KEY=VALUE). */
export async function helmInstall(kubeconfig: string, values: string[] = []): Promise<void> {
  const images = [
    `agent.image.repository=${FLOCK_IMAGES.agent.repository}`,
    `agent.image.tag=${FLOCK_IMAGES.agent.tag}`,
    `operator.image.repository=${FLOCK_IMAGES.operator.repository}`,
    `operator.image.tag=${FLOCK_IMAGES.operator.tag}`,
  ];
  await helm(kubeconfig, [
    ...['upgrade', '--install', RELEASE, CHART, '--create-namespace'],
    ...helmSet([...images, ...values]),
  ]);
}
