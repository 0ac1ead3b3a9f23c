import { parseState } from './state.js';
import { render } from './render.js';
import { translate } from './translate.js';

export * from './errors.js';
export * from './state.js';
export * from './ir.js';
export { translate, effectiveTypes, IncrementalTranslator } from './translate.js';
export {
  render,
  renderTable,
  dropLogPrefix,
  type RenderOptions,
  tableScript,
  TABLE_FAMILY,
  TABLE_NAME,
  type NftChain,
  type NftSet,
  type NftTable,
} from './render.js';
export { diffTables } from './diff.js';
export type { SnatOptions } from './render-snat.js';
export { NAMESPACE_NAME_LABEL } from './cluster.js';
export * from './apply.js';

/** parseState + translate + render: the script for a raw (unvalidated) state. */
export function renderState(raw: unknown): string {
  return render(translate(parseState(raw)));
}
