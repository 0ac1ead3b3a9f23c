// `node --test tools/eslint-rules/`: flock/no-import-cycle on a package written to a temporary
// directory (part of `npm test`). The linted file's code is the one on disk: the rule reads the
// other files of the cycle from there.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { ESLint, RuleTester } from 'eslint';
import tseslint from 'typescript-eslint';
import plugin from './no-import-cycle.mjs';

RuleTester.describe = describe;
RuleTester.it = it;

const pkg = mkdtempSync(join(tmpdir(), 'flock-no-import-cycle-'));
after(() => rmSync(pkg, { recursive: true, force: true }));

/** The fixture package: path under the package root -> code. */
const files = {
  'package.json': '{}',
  // Two files.
  'src/two/a.ts': "import { b } from './b.js';\nexport const a = () => b;",
  'src/two/b.ts': "import { a } from './a.js';\nexport const b = () => a;",
  // Three files, one of them through a directory's index.ts and a re-export.
  'src/three/a.ts': "import { b } from './b/index.js';\nexport const a = () => b;",
  'src/three/b/index.ts': "export { b } from '../c.js';",
  'src/three/c.ts': "import { a } from './a.js';\nexport const b = () => a;",
  // Types only: harmless at run time, still a cycle between the two files.
  'src/types/a.ts': "import type { B } from './b.js';\nexport interface A { b?: B }",
  'src/types/b.ts': "export interface B { a?: import('./a.js').A }",
  // No cycle: a imports b and c, b imports c.
  'src/dag/a.ts':
    "import { b } from './b.js';\nimport { c } from './c.js';\nexport const a = b + c;",
  'src/dag/b.ts': "import { c } from './c.js';\nexport const b = c;",
  'src/dag/c.ts': 'export const c = 1;',
  // A test importing its subject (which imports a helper the test also uses): no cycle.
  'src/tested/x.ts': "import { h } from './h.js';\nexport const x = h;",
  'src/tested/h.ts': 'export const h = 1;',
  'src/tested/x.test.ts': "import { x } from './x.js';\nimport { h } from './h.js';\nx === h;",
  // A cycle outside src/ (the harness, say) is not this rule's.
  'testing/a.ts': "import { b } from './b.js';\nexport const a = b;",
  'testing/b.ts': "import { a } from './a.js';\nexport const b = a;",
};
for (const [path, code] of Object.entries(files)) {
  mkdirSync(dirname(join(pkg, path)), { recursive: true });
  writeFileSync(join(pkg, path), code);
}
const at = (path) => ({ name: path, filename: join(pkg, path), code: files[path] });
const cycle = (text) => ({ messageId: 'cycle', data: { cycle: text } });

const tester = new RuleTester({ languageOptions: { parser: tseslint.parser } });

tester.run('no-import-cycle', plugin.rules['no-import-cycle'], {
  valid: [
    at('src/dag/a.ts'),
    at('src/dag/b.ts'),
    at('src/dag/c.ts'),
    at('src/tested/x.ts'),
    at('src/tested/x.test.ts'),
    at('testing/a.ts'),
    // An import of a file that is not there, or of a package, is no edge.
    {
      name: 'src/dag/d.ts, importing what is not there',
      filename: join(pkg, 'src/dag/d.ts'),
      code: "import { z } from './z.js';\nimport 'zod';",
    },
  ],
  invalid: [
    { ...at('src/two/a.ts'), errors: [cycle('src/two/a.ts → src/two/b.ts → src/two/a.ts')] },
    { ...at('src/two/b.ts'), errors: [cycle('src/two/b.ts → src/two/a.ts → src/two/b.ts')] },
    {
      ...at('src/three/a.ts'),
      errors: [cycle('src/three/a.ts → src/three/b/index.ts → src/three/c.ts → src/three/a.ts')],
    },
    {
      ...at('src/three/b/index.ts'),
      errors: [
        cycle('src/three/b/index.ts → src/three/c.ts → src/three/a.ts → src/three/b/index.ts'),
      ],
    },
    {
      ...at('src/types/a.ts'),
      errors: [cycle('src/types/a.ts → src/types/b.ts → src/types/a.ts')],
    },
    {
      // import('./a.js').A in a type position
      ...at('src/types/b.ts'),
      errors: [cycle('src/types/b.ts → src/types/a.ts → src/types/b.ts')],
    },
    {
      // The linted file's own code counts, not its copy on disk: an unsaved edit that closes a
      // cycle is reported, at the import that closes it, through every kind of reference.
      name: 'src/dag/c.ts, edited to close two cycles',
      filename: join(pkg, 'src/dag/c.ts'),
      code: [
        "import { c as d } from './d.js';",
        "export * as all from './a.js';",
        "export type { B } from '../types/b.js';",
        "const lazy = () => import('./b.js');",
        'export const c = 1;',
      ].join('\n'),
      errors: [
        { ...cycle('src/dag/c.ts → src/dag/a.ts → src/dag/c.ts'), line: 2 },
        { ...cycle('src/dag/c.ts → src/dag/b.ts → src/dag/c.ts'), line: 4 },
      ],
    },
  ],
});

// `nx lint` runs `eslint .` in the project's directory, with its eslint.config.mjs (the root one,
// imported): `files` patterns are then relative to the project, not to the workspace.
describe('the workspace lint config', () => {
  const root = join(import.meta.dirname, '..', '..');
  const rules = async (cwd, file) =>
    (await new ESLint({ cwd: join(root, cwd) }).calculateConfigForFile(file)).rules ?? {};
  const where = [
    ['packages/ipam', 'src/index.ts', 2],
    ['packages/agent', 'src/agent.ts', 2],
    ['.', 'packages/agent/src/agent.ts', 2],
    ['packages/ipam', 'src/index.test.ts', undefined],
    ['packages/kube', 'testing/index.ts', undefined],
    ['.', 'packages/kube/testing/index.ts', undefined],
  ];
  for (const [cwd, file, level] of where) {
    it(`${level ? 'checks' : 'leaves out'} ${file} (eslint in ${cwd})`, async () => {
      const r = await rules(cwd, file);
      assert.equal(r['flock/no-import-cycle']?.[0], level);
      assert.equal(r['no-restricted-imports']?.[0], level);
    });
  }
});
