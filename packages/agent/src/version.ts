// The agent's version: its package.json's (src/ and dist/ sit at the same depth in the package,
// and the image copies the package.json next to dist/).
import { packageVersion } from '@flock/kube';

export const agentVersion = (): string =>
  packageVersion(new URL('../package.json', import.meta.url));
