// Kubernetes building blocks reused by flock's objects: label selectors, conditions, object metadata.
import { z } from 'zod';
import { withRules } from './rules.js';

/** A DNS-1123 label (namespace names). */
export const DnsLabel = z
  .string()
  .max(63)
  .regex(
    /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/,
    'must be a DNS-1123 label (lower-case alphanumerics and -)',
  );

/** A DNS-1123 subdomain (most object names, e.g. pods and nodes). */
export const DnsSubdomain = z
  .string()
  .max(253)
  .regex(
    /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/,
    'must be a DNS-1123 subdomain (lower-case alphanumerics, - and .)',
  );

/** A label selector (metav1.LabelSelector). Empty or absent selects everything. */
export const LabelSelectorRequirement = withRules(
  z.object({
    key: z.string().min(1).max(317).describe('The label key the requirement applies to.'),
    operator: z
      .enum(['In', 'NotIn', 'Exists', 'DoesNotExist'])
      .describe('How the key relates to the values.'),
    values: z
      .array(z.string().max(63))
      .max(64)
      .optional()
      .describe(
        'Values for In and NotIn (must be non-empty there); empty for Exists and DoesNotExist.',
      ),
  }),
  [
    {
      cel: "self.operator in ['In', 'NotIn'] ? (has(self.values) && size(self.values) > 0) : (!has(self.values) || size(self.values) == 0)",
      message: 'values must be non-empty for In and NotIn, and empty for Exists and DoesNotExist',
      check: (r) =>
        r.operator === 'In' || r.operator === 'NotIn'
          ? (r.values?.length ?? 0) > 0
          : (r.values?.length ?? 0) === 0,
    },
  ],
);
export type LabelSelectorRequirement = z.infer<typeof LabelSelectorRequirement>;

export const LabelSelector = z
  .object({
    matchLabels: z
      .record(z.string(), z.string())
      .optional()
      .describe('Labels that must all match exactly.'),
    matchExpressions: z
      .array(LabelSelectorRequirement)
      .max(32)
      .optional()
      .describe('Requirements that must all hold.'),
  })
  .describe('Selects objects by label; an empty selector selects every object.');
export type LabelSelector = z.infer<typeof LabelSelector>;

const ConditionStatus = z.enum(['True', 'False', 'Unknown']);

/** A status condition (metav1.Condition). */
export const Condition = z.object({
  type: z.string().min(1).max(316).describe('Condition type, e.g. Ready.'),
  status: ConditionStatus.describe('True, False or Unknown.'),
  reason: z.string().min(1).max(1024).describe('One CamelCase word saying why.'),
  message: z.string().max(32768).describe('What a person needs to know, in a sentence.'),
  lastTransitionTime: z.string().describe('When status last changed (RFC 3339).'),
  observedGeneration: z
    .int()
    .min(0)
    .optional()
    .describe('The .metadata.generation the condition was computed from.'),
});
export type Condition = z.infer<typeof Condition>;

/** The part of ObjectMeta flock reads. Unknown fields pass through untouched. */
export const ObjectMeta = z.looseObject({
  name: z.string().min(1),
  namespace: z.string().optional(),
  uid: z.string().optional(),
  resourceVersion: z.string().optional(),
  generation: z.int().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
  creationTimestamp: z.union([z.string(), z.date()]).optional(),
  deletionTimestamp: z.union([z.string(), z.date()]).optional(),
  ownerReferences: z.array(z.looseObject({})).optional(),
  finalizers: z.array(z.string()).optional(),
});
export type ObjectMeta = z.infer<typeof ObjectMeta>;

/** Does a label set satisfy a selector? (Same semantics as metav1.LabelSelectorAsSelector.) */
export function matchesSelector(
  selector: LabelSelector | undefined,
  labels: Record<string, string> = {},
): boolean {
  if (!selector) return true;
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) {
    if (labels[key] !== value) return false;
  }
  for (const req of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, req.key);
    const values = req.values ?? [];
    switch (req.operator) {
      case 'In':
        if (!has || !values.includes(labels[req.key] as string)) return false;
        break;
      case 'NotIn':
        if (has && values.includes(labels[req.key] as string)) return false;
        break;
      case 'Exists':
        if (!has) return false;
        break;
      case 'DoesNotExist':
        if (has) return false;
        break;
    }
  }
  return true;
}
