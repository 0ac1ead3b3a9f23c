import base, { testRules } from '../../eslint.config.mjs';

// All of testkit is test infrastructure.
export default [...base, { files: ['**/*.ts'], rules: testRules }];
