// The lab's tests (lab/) are all cluster tier: root, the real control plane, namespaces. The
// chart's tests (chart/) have a unit tier too (helm lint/template, images, npm pack) and a
// cluster tier (helm install). Lab bring-up takes a while: longer limits than the packages'.
import { tierConfig } from '../vitest.shared.js';

export default tierConfig(import.meta.dirname, {
  dirs: ['lab', 'chart'],
  testTimeoutMs: 300_000,
  hookTimeoutMs: 600_000,
});
