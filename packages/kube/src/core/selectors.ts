// Label and field selectors in the API server's string syntax: field selectors formatted for
// list/watch queries (validated, so nothing can be smuggled into a query), and both kinds parsed
// (the fake API server evaluates them like the real one).
import type { LabelSelector, LabelSelectorRequirement } from '@flock/api';

const LABEL_KEY =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/;

function checkKey(key: string): string {
  if (key.length > 317 || !LABEL_KEY.test(key))
    throw new Error(`invalid label key ${JSON.stringify(key)}`);
  return key;
}
function checkValue(value: string): string {
  if (!LABEL_VALUE.test(value)) throw new Error(`invalid label value ${JSON.stringify(value)}`);
  return value;
}

/** Parse the string syntax into a LabelSelector (every requirement as a matchExpression). */
export function parseLabelSelector(text: string): LabelSelector {
  const reqs: LabelSelectorRequirement[] = [];
  let i = 0;
  const fail = (why: string): never => {
    throw new Error(`invalid label selector ${JSON.stringify(text)}: ${why} at ${i}`);
  };
  const skip = () => {
    while (text[i] === ' ') i++;
  };
  const word = (re: RegExp) => {
    const start = i;
    while (i < text.length && re.test(text[i] as string)) i++;
    return text.slice(start, i);
  };
  const keyChars = /[A-Za-z0-9._/-]/;
  skip();
  if (i === text.length) return {};
  for (;;) {
    skip();
    const negate = text[i] === '!';
    if (negate) i++;
    skip();
    const key = word(keyChars);
    if (!key) fail('expected a key');
    checkKey(key);
    skip();
    if (negate) {
      reqs.push({ key, operator: 'DoesNotExist' });
    } else if (text.startsWith('!=', i) || text.startsWith('==', i) || text[i] === '=') {
      const op = text.startsWith('!=', i) ? 'NotIn' : 'In';
      i += text.startsWith('=', i) && text[i + 1] !== '=' ? 1 : 2;
      skip();
      reqs.push({ key, operator: op, values: [checkValue(word(keyChars))] });
    } else if (/^(in|notin)\s*\(/.test(text.slice(i))) {
      const op = text.startsWith('notin', i) ? 'NotIn' : 'In';
      i += op === 'In' ? 2 : 5;
      skip();
      i++; // '('
      const values: string[] = [];
      for (;;) {
        skip();
        values.push(checkValue(word(keyChars)));
        skip();
        if (text[i] === ',') i++;
        else if (text[i] === ')') break;
        else fail('expected , or )');
      }
      i++;
      reqs.push({ key, operator: op, values });
    } else {
      reqs.push({ key, operator: 'Exists' });
    }
    skip();
    if (i === text.length) break;
    if (text[i] !== ',') fail('expected ,');
    i++;
  }
  return { matchExpressions: reqs };
}

export interface FieldRequirement {
  field: string;
  op: '=' | '!=';
  value: string;
}

const FIELD = /^[A-Za-z0-9_.-]+$/;
const escapeFieldValue = (v: string) => v.replace(/[\\,=]/g, (c) => `\\${c}`);

/** "spec.nodeName=n1,status.phase!=Failed" from {field: value} (equality) or requirements. */
export function formatFieldSelector(fields: Record<string, string> | FieldRequirement[]): string {
  const reqs = Array.isArray(fields)
    ? fields
    : Object.entries(fields).map(([field, value]) => ({ field, op: '=' as const, value }));
  return reqs
    .map((r) => {
      if (!FIELD.test(r.field)) throw new Error(`invalid field ${JSON.stringify(r.field)}`);
      return `${r.field}${r.op}${escapeFieldValue(r.value)}`;
    })
    .join(',');
}

/** Parse "a=b,c!=d" (with \\ escapes in values; "==" means "="). */
export function parseFieldSelector(text: string): FieldRequirement[] {
  const reqs: FieldRequirement[] = [];
  if (!text.trim()) return reqs;
  // Split on unescaped commas, then on the first unescaped operator.
  const terms: string[] = [];
  let cur = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (c === '\\' && i + 1 < text.length) {
      cur += c + text[++i];
    } else if (c === ',') {
      terms.push(cur);
      cur = '';
    } else cur += c;
  }
  terms.push(cur);
  for (const term of terms) {
    const m = /^([A-Za-z0-9_.-]+)\s*(!=|==|=)(.*)$/.exec(term.trim());
    if (!m) throw new Error(`invalid field selector ${JSON.stringify(text)}`);
    const value = (m[3] as string).replace(/\\(.)/g, '$1');
    reqs.push({ field: m[1] as string, op: m[2] === '!=' ? '!=' : '=', value });
  }
  return reqs;
}

/** The value of a dotted field path as the API server compares it ('' when absent). */
export function fieldValue(obj: unknown, field: string): string {
  let cur: unknown = obj;
  for (const part of field.split('.')) {
    if (cur === null || typeof cur !== 'object') return '';
    cur = (cur as Record<string, unknown>)[part];
  }
  // Only scalars have a value a selector compares; a path that ends at an object has none.
  return typeof cur === 'string' || typeof cur === 'number' || typeof cur === 'boolean'
    ? String(cur)
    : '';
}

export function matchesFieldSelector(reqs: FieldRequirement[], obj: unknown): boolean {
  return reqs.every((r) => (fieldValue(obj, r.field) === r.value) === (r.op === '='));
}
