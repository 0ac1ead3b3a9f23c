// A validation rule stated once and enforced twice: as CEL in the generated CRD (the API
// server refuses bad objects) and as a zod refinement (every read in the operator and agent
// re-checks it). Same message in both places, so users see one wording.
import type { z } from 'zod';

interface Rule<T> {
  /** CEL expression over `self` for the CRD's x-kubernetes-validations. */
  cel: string;
  /** What the user is told; names the field and what to do. */
  message: string;
  /** The same rule in TypeScript, for reads of existing objects. */
  check: (value: T) => boolean;
  /** Field the message is about, relative to this schema (CEL fieldPath, zod issue path). */
  field?: string;
}

/** A CEL rule that only the API server can apply (it needs oldSelf, or runs on updates only). */
interface TransitionRule {
  cel: string;
  message: string;
  field?: string;
}

const VALIDATIONS_KEY = 'x-kubernetes-validations';

interface CelValidation {
  rule: string;
  message: string;
  fieldPath?: string;
}

function toCel(r: { cel: string; message: string; field?: string }): CelValidation {
  return r.field
    ? { rule: r.cel, message: r.message, fieldPath: `.${r.field}` }
    : { rule: r.cel, message: r.message };
}

/** Attach rules to a schema: zod checks them on parse, the CRD generator emits them as CEL. */
export function withRules<S extends z.ZodType>(
  schema: S,
  rules: Rule<z.output<S>>[],
  transitions: TransitionRule[] = [],
): S {
  const refined = schema.superRefine((value, ctx) => {
    for (const r of rules) {
      if (!r.check(value))
        ctx.addIssue({ code: 'custom', message: r.message, path: r.field ? [r.field] : [] });
    }
  });
  return refined.meta({ [VALIDATIONS_KEY]: [...rules.map(toCel), ...transitions.map(toCel)] });
}
