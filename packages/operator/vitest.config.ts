import { tierConfig } from '../../vitest.shared.js';

export default tierConfig(import.meta.dirname);
