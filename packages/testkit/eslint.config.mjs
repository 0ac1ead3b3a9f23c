import base, { depConstraints, testRules } from '../../eslint.config.mjs';

// All of testkit is test infrastructure.
export default [
  ...base,
  {
    files: ['**/*.ts'],
    rules: { ...testRules, 'flock/module-boundaries': ['error', { depConstraints, test: true }] },
  },
];
