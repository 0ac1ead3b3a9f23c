// A validation rule stated once and enforced twice: as CEL in the generated CRD (the API
// server refuses bad objects) and as a zod refinement (every read in the operator and agent
// re-checks it). Same message in both places, so users see one wording.
import type { z } from 'zod';

export interface Rule<T> {
  /** CEL expression over `self` for the CRD's x-kubernetes-validations. */
  cel: string;
  /** What the user is told; names the field and what to do. */
  message: string;
  /**
   * CEL that builds the message from `self` (naming the values at fault); `message` stays the
   * API server's fallback when it fails. `check` then returns the same text.
   */
  messageExpression?: string;
  /**
   * The same rule in TypeScript, for reads of existing objects: true when it holds; false, or
   * (with messageExpression) the text messageExpression gives, when it does not.
   */
  check: (value: T) => boolean | string;
  /** Field the message is about, relative to this schema (CEL fieldPath, zod issue path), e.g. pinned.cidrs. */
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
  messageExpression?: string;
  fieldPath?: string;
}

function toCel(r: {
  cel: string;
  message: string;
  messageExpression?: string;
  field?: string;
}): CelValidation {
  return {
    rule: r.cel,
    message: r.message,
    ...(r.messageExpression ? { messageExpression: r.messageExpression } : {}),
    ...(r.field ? { fieldPath: `.${r.field}` } : {}),
  };
}

/**
 * Attach rules to a schema: zod checks them on parse, the CRD generator emits them as CEL.
 * Rules already on the schema (an earlier withRules) are kept, these follow them.
 */
export function withRules<S extends z.ZodType>(
  schema: S,
  rules: Rule<z.output<S>>[],
  transitions: TransitionRule[] = [],
): S {
  const earlier = (schema.meta()?.[VALIDATIONS_KEY] as CelValidation[] | undefined) ?? [];
  const refined = schema.superRefine((value, ctx) => {
    for (const r of rules) {
      const verdict = r.check(value);
      if (verdict === true) continue;
      ctx.addIssue({
        code: 'custom',
        message: typeof verdict === 'string' ? verdict : r.message,
        path: r.field ? r.field.split('.') : [],
      });
    }
  });
  return refined.meta({
    [VALIDATIONS_KEY]: [...earlier, ...rules.map(toCel), ...transitions.map(toCel)],
  });
}

/** The validations withRules attached to a schema (the CRD generator's root rules). */
export function celValidations(schema: z.ZodType): CelValidation[] {
  return (schema.meta()?.[VALIDATIONS_KEY] as CelValidation[] | undefined) ?? [];
}
