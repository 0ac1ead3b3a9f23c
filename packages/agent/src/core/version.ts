// The program's version: its package.json's, next to src/ (src/core/ from the sources, three
// levels above dist/src/core/; the image copies the package.json there too).
import { packageVersion } from '@flock/kube';

export const agentVersion = (): string =>
  packageVersion(
    new URL(
      import.meta.url.endsWith('.ts') ? '../../package.json' : '../../../package.json',
      import.meta.url,
    ),
  );

/** The version for the agent's status: a status without it beats no status. */
export function statusVersion(): string | undefined {
  try {
    return agentVersion();
  } catch {
    return undefined;
  }
}
