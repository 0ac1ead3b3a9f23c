// One lint config for the workspace: typescript-eslint's recommended rules with type information
// (the project service finds each file's tsconfig), so promise misuse — a floating promise, an
// async callback where a void one is expected, awaiting a non-promise — is an error everywhere.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import boundaries from './tools/eslint-rules/module-boundaries.mjs';
import cycles from './tools/eslint-rules/no-import-cycle.mjs';

const flock = { rules: { ...boundaries.rules, ...cycles.rules } };

/**
 * What a project may import, by its `nx.tags` (package.json): api ← libraries ← apps, and
 * apps never import each other. Test code may also import projects tagged type:test.
 */
export const depConstraints = {
  'type:api': ['type:api'],
  'type:lib': ['type:api', 'type:lib'],
  'type:app': ['type:api', 'type:lib'],
  'type:test': ['type:api', 'type:lib', 'type:app', 'type:test'],
};

/** Not shipped: tests, and the harness and benchmarks beside a package's src/. */
export const testFiles = ['**/*.test.ts', '**/testing/**', '**/bench/**'];

/** What tests and test doubles may do that production code may not. */
export const testRules = {
  // vitest's asymmetric matchers (expect.stringContaining, expect.any) are typed `any`, and
  // tests read raw JSON replies on purpose: the assertion is the type check there.
  '@typescript-eslint/no-unsafe-assignment': 'off',
  '@typescript-eslint/no-unsafe-member-access': 'off',
  '@typescript-eslint/no-unsafe-argument': 'off',
  '@typescript-eslint/no-unsafe-return': 'off',
  '@typescript-eslint/no-unsafe-call': 'off',
  // Test doubles implement promise-returning interfaces with synchronous bodies; `async`
  // keeps a thrown error a rejection, as it is in the real implementation.
  '@typescript-eslint/require-await': 'off',
  'no-console': 'off',
};

export default tseslint.config(
  {
    ignores: [
      '**/dist/**',
      '**/node_modules/**',
      '**/.nx/**',
      '.cache/**',
      '.tools/**',
      '**/out-tsc/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
  },
  // Plain JavaScript (config files, build scripts) and the vitest configs belong to no tsconfig.
  {
    files: ['**/*.{js,mjs,cjs}', '**/vitest.config.ts'],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    files: ['**/*.ts'],
    plugins: { flock },
    rules: {
      'flock/module-boundaries': ['error', { depConstraints }],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-console': 'error',
    },
  },
  { files: testFiles, rules: testRules },
  {
    files: testFiles,
    rules: { 'flock/module-boundaries': ['error', { depConstraints, test: true }] },
  },
  // What ships is src/: production code there never imports the harness or the benchmarks
  // beside it (testing/, bench/), nor a package's fakes (@flock/<p>/testing; module-boundaries
  // says so too, for every non-test file). And no import cycle between the files of a
  // package's src/, type-only imports included (flock/no-import-cycle; tests are no part of it).
  // `nx lint` runs eslint in the project's directory, where `files` are relative to the project:
  // `src/**` is how it sees a package's src/, `packages/*/src/**` how eslint from the root does.
  {
    files: ['src/**/*.ts', 'packages/*/src/**/*.ts'],
    ignores: testFiles,
    rules: {
      'flock/no-import-cycle': 'error',
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '(^|/)(testing|bench)(/|$)',
              message: 'src/ ships; the harness (testing/, @flock/*/testing) and bench/ do not.',
            },
          ],
        },
      ],
    },
  },
  { files: ['scripts/**', '**/cli.ts', '**/bin/**'], rules: { 'no-console': 'off' } },
);
