// Where the repository is, from any file in it: the harness runs both from its sources
// (testing/x.ts) and compiled (dist/testing/x.js), one level deeper.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** The repository root: the nearest directory above `from` that holds nx.json. */
export function repoRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'nx.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no repository (nx.json) above ${from}`);
  }
}
