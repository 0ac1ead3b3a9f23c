// The program's version: its package.json's, next to src/ (two levels above dist/src/; the image
// copies the package.json there too).
import { packageVersion } from '@flock/kube';

export const operatorVersion = (): string =>
  packageVersion(
    new URL(
      import.meta.url.endsWith('.ts') ? '../package.json' : '../../package.json',
      import.meta.url,
    ),
  );
