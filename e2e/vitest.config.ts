// The lab's tests are all cluster tier (root, the real control plane, namespaces): they run
// only under FLOCK_TEST_TIER=cluster, one file at a time.
import { defineConfig } from 'vitest/config';

const results = process.env['FLOCK_TEST_RESULTS'];

export default defineConfig({
  root: import.meta.dirname,
  test: {
    include: ['lab/**/*.cluster.test.ts'],
    exclude: ['**/node_modules/**', '**/dist/**'],
    environment: 'node',
    testTimeout: 300_000,
    hookTimeout: 600_000,
    fileParallelism: false,
    reporters: results ? ['default', 'json'] : ['default'],
    outputFile: results ? { json: `${results}/e2e-cluster.json` } : {},
    passWithNoTests: false,
  },
});
