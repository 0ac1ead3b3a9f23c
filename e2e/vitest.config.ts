// The lab's tests (lab/) are all cluster tier: root, the real control plane, namespaces. The
// chart's tests (chart/) have a unit tier too (helm lint/template, images, npm pack) and a
// cluster tier (helm install). The images' tests (images/) build the images with buildah and run
// what is inside: cluster tier too (root; CI's cluster step). Lab bring-up and a cold image
// build take a while: longer limits than the packages'. The chart's unit tests start programs
// (helm, npm pack, the assembled agent and operator: seconds each on a loaded machine).
import { tierConfig } from '../vitest.shared.js';

export default tierConfig(import.meta.dirname, {
  dirs: ['lab', 'chart', 'images'],
  testTimeoutMs: 300_000,
  hookTimeoutMs: 600_000,
  unitTestTimeoutMs: 60_000,
});
