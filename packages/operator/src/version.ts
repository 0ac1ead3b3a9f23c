// The operator's version: its package.json's (src/ and dist/ sit at the same depth in the
// package, and the image copies the package.json next to dist/).
import { readFileSync } from 'node:fs';
import { z } from 'zod';

export function operatorVersion(): string {
  const pkg: unknown = JSON.parse(
    readFileSync(new URL('../package.json', import.meta.url), 'utf8'),
  );
  return z.object({ version: z.string().min(1) }).parse(pkg).version;
}
