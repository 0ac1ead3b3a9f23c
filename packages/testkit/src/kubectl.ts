// kubectl and helm (extracted into .cache/bin by ./dev setup) against a kubeconfig.
import { run, type RunOptions, type RunResult } from '@flock/exec';
import { requireTools } from './preflight.js';

export function kubectl(
  kubeconfig: string,
  args: readonly string[],
  options?: RunOptions,
): Promise<RunResult> {
  requireTools('kubectl');
  return run('kubectl', ['--kubeconfig', kubeconfig, ...args], options);
}

export function helm(
  kubeconfig: string,
  args: readonly string[],
  options?: RunOptions,
): Promise<RunResult> {
  requireTools('helm');
  return run('helm', ['--kubeconfig', kubeconfig, ...args], options);
}
