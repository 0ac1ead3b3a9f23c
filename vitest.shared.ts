// Shared vitest settings. Test tiers are told apart by file name:
//   *.test.ts          unit tier (pure logic, in-memory fakes)       -> target `test`
//   *.kernel.test.ts   kernel tier (root, own network namespaces)    -> target `test-kernel`
//   *.cluster.test.ts  cluster tier (real API server)                -> target `test-cluster`
import { basename } from 'node:path';
import { defineConfig } from 'vitest/config';

export type Tier = 'unit' | 'kernel' | 'cluster';

const tierSuffix: Record<Tier, string> = {
  unit: '.test.ts',
  kernel: '.kernel.test.ts',
  cluster: '.cluster.test.ts',
};

export interface TierOptions {
  /** Directories holding tests (default: the package's src, testing and bench). */
  dirs?: string[];
  /** Per-test and per-hook time limits of the kernel and cluster tiers (ms). */
  testTimeoutMs?: number;
  hookTimeoutMs?: number;
  /** Per-test limit of the unit tier (default 10 s): more where unit tests start programs. */
  unitTestTimeoutMs?: number;
}

export function tierConfig(root: string, options: TierOptions = {}) {
  const tier = (process.env['FLOCK_TEST_TIER'] ?? 'unit') as Tier;
  const exclude = tier === 'unit' ? ['**/*.kernel.test.ts', '**/*.cluster.test.ts'] : [];
  const dirs = options.dirs ?? ['src', 'testing', 'bench'];
  return defineConfig({
    root,
    test: {
      include: dirs.map((d) => `${d}/**/*${tierSuffix[tier]}`),
      exclude: ['**/node_modules/**', '**/dist/**', ...exclude],
      environment: 'node',
      testTimeout:
        tier === 'unit'
          ? (options.unitTestTimeoutMs ?? 10_000)
          : (options.testTimeoutMs ?? 120_000),
      hookTimeout: tier === 'unit' ? 10_000 : (options.hookTimeoutMs ?? 300_000),
      // Kernel and cluster tests share the machine's namespaces and ports: run files one by one.
      fileParallelism: tier === 'unit',
      // npm test sums these JSON reports into its closing "N passed, N failed" line.
      reporters: process.env['FLOCK_TEST_RESULTS'] ? ['default', 'json'] : ['default'],
      outputFile: process.env['FLOCK_TEST_RESULTS']
        ? { json: `${process.env['FLOCK_TEST_RESULTS']}/${basename(root)}-${tier}.json` }
        : {},
      passWithNoTests: false,
    },
  });
}
