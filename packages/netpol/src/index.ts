import { parseState } from './state.js';
import { render } from './render.js';
import { translate } from './translate.js';

export * from './errors.js';
export * from './state.js';
export * from './ir.js';
export { translate, effectiveTypes } from './translate.js';
export { render, TABLE_FAMILY, TABLE_NAME } from './render.js';
export * from './apply.js';

/** parseState + translate + render: the script for a raw (unvalidated) state. */
export function renderState(raw: unknown): string {
  return render(translate(parseState(raw)));
}
