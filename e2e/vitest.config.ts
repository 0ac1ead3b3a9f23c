// The lab's tests are all cluster tier (root, the real control plane, namespaces): they run
// only under FLOCK_TEST_TIER=cluster, one file at a time. The chart's tests (chart/) have a
// unit tier too (helm lint/template, images, npm pack), run by the `test` script.
import { defineConfig } from 'vitest/config';

const results = process.env['FLOCK_TEST_RESULTS'];
const cluster = process.env['FLOCK_TEST_TIER'] === 'cluster';

export default defineConfig({
  root: import.meta.dirname,
  test: {
    include: cluster
      ? ['lab/**/*.cluster.test.ts', 'chart/**/*.cluster.test.ts']
      : ['chart/**/*.test.ts'],
    exclude: ['**/node_modules/**', '**/dist/**', ...(cluster ? [] : ['**/*.cluster.test.ts'])],
    environment: 'node',
    testTimeout: 300_000,
    hookTimeout: 600_000,
    fileParallelism: false,
    reporters: results ? ['default', 'json'] : ['default'],
    outputFile: results ? { json: `${results}/e2e-${cluster ? 'cluster' : 'unit'}.json` } : {},
    passWithNoTests: false,
  },
});
