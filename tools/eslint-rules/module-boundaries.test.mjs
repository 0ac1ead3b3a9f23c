// `node --test tools/eslint-rules/`: flock/module-boundaries against the workspace's real
// projects and tags (part of `npm test`).
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { RuleTester } from 'eslint';
import tseslint from 'typescript-eslint';
import plugin from './module-boundaries.mjs';
import { depConstraints } from '../../eslint.config.mjs';

RuleTester.describe = describe;
RuleTester.it = it;

const root = join(import.meta.dirname, '..', '..');
const at = (path) => join(root, path);
const prod = [{ depConstraints }];
const test = [{ depConstraints, test: true }];
const tester = new RuleTester({ languageOptions: { parser: tseslint.parser } });

tester.run('module-boundaries', plugin.rules['module-boundaries'], {
  valid: [
    {
      filename: at('packages/ipam/src/x.ts'),
      code: "import { x } from '@flock/api';",
      options: prod,
    },
    { filename: at('packages/ipam/src/x.ts'), code: "import { x } from './y.js';", options: prod },
    {
      filename: at('packages/agent/src/x.ts'),
      code: "import { x } from '@flock/kube';",
      options: prod,
    },
    // Type-only: nothing to load at run time, so a dev dependency is enough.
    {
      filename: at('packages/agent/src/x.ts'),
      code: "import type { V1Pod } from '@kubernetes/client-node';",
      options: prod,
    },
    {
      filename: at('packages/agent/src/x.test.ts'),
      code: "import { Netns } from '@flock/testkit';\nimport { FakeApiServer } from '@flock/kube/testing';",
      options: test,
    },
    { filename: at('e2e/lab/x.ts'), code: "import { x } from '@flock/agent';", options: test },
    {
      filename: at('packages/agent/src/x.ts'),
      code: "import { x } from 'node:fs';",
      options: prod,
    },
  ],
  invalid: [
    {
      filename: at('packages/ipam/src/x.ts'),
      code: "import { x } from '@flock/agent';",
      options: prod,
      errors: [{ messageId: 'tag' }, { messageId: 'undeclared' }],
    },
    {
      // Apps never import each other.
      filename: at('packages/operator/src/x.ts'),
      code: "export { x } from '@flock/agent';",
      options: prod,
      errors: [{ messageId: 'tag' }, { messageId: 'undeclared' }],
    },
    {
      // Production code never imports testkit, not even in a type-only import.
      filename: at('packages/agent/src/x.ts'),
      code: "import type { Netns } from '@flock/testkit';",
      options: prod,
      errors: [{ messageId: 'tag' }],
    },
    {
      filename: at('packages/api/src/x.ts'),
      code: "const k = await import('@flock/kube');",
      options: prod,
      errors: [{ messageId: 'tag' }, { messageId: 'undeclared' }],
    },
    {
      filename: at('packages/agent/src/x.ts'),
      code: "import { FakeApiServer } from '@flock/kube/testing';",
      options: prod,
      errors: [{ messageId: 'testing' }],
    },
    {
      filename: at('packages/agent/src/x.ts'),
      code: "import { Cache } from '../../kube/src/cache.js';",
      options: prod,
      errors: [{ messageId: 'relative' }],
    },
    {
      filename: at('packages/kube/src/x.ts'),
      code: "import { Cache } from '@flock/kube';",
      options: prod,
      errors: [{ messageId: 'self' }],
    },
    {
      // A dev dependency is not there at run time.
      filename: at('packages/agent/src/x.ts'),
      code: "import { CoreV1Api } from '@kubernetes/client-node';",
      options: prod,
      errors: [{ messageId: 'undeclared' }],
    },
  ],
});
