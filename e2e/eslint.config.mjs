import base, { depConstraints, testRules } from '../eslint.config.mjs';

// All of e2e is test infrastructure.
export default [
  ...base,
  { ignores: ['controlplane/**'] },
  {
    files: ['**/*.ts'],
    rules: { ...testRules, 'flock/module-boundaries': ['error', { depConstraints, test: true }] },
  },
];
