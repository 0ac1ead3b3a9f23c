// Floating ranges: the pinned and anycast ranges of a Pool, and who may claim from them. A
// range alone is claimable by nobody; a grant names the namespaces that may claim from it (by
// label selector), the sub-ranges, and the BGP communities their pods may add to their own
// announcements. `anyNamespace: true` is the insecure pre-grant behaviour, explicit.
import { z } from 'zod';
import { Communities } from './communities.js';
import { LabelSelector } from './meta.js';
import { cidrString } from './net.js';
import { withRules } from './rules.js';

/** Grants per floating range list, and sub-ranges per grant (bounded for CEL's cost budget). */
export const MAX_GRANTS = 16;
export const MAX_GRANT_CIDRS = 16;

export const FloatingGrant = withRules(
  z.object({
    namespaceSelector: LabelSelector.optional().describe(
      'The namespaces that may claim, by their labels (kubernetes.io/metadata.name: NAME selects one namespace by name).',
    ),
    anyNamespace: z
      .boolean()
      .optional()
      .describe(
        'INSECURE: every namespace of the cluster may claim (flock before grants). Any tenant can then take any free address of these ranges; see docs/operations.md.',
      ),
    cidrs: z
      .array(cidrString('grants[].cidrs[]'))
      .min(1)
      .max(MAX_GRANT_CIDRS)
      .optional()
      .describe("Sub-ranges of the list's cidrs this grant covers; absent: all of them."),
    communities: Communities.optional().describe(
      'BGP communities pods of these namespaces may add to their own announcements (annotation flock.fritzlab.net/bgp-communities).',
    ),
  }),
  [
    {
      cel: 'has(self.namespaceSelector) != (has(self.anyNamespace) && self.anyNamespace)',
      message: 'a grant names its namespaces: either namespaceSelector or anyNamespace: true',
      check: (g) => (g.namespaceSelector !== undefined) !== (g.anyNamespace === true),
    },
  ],
).describe('Which namespaces may claim addresses from these ranges.');
export type FloatingGrant = z.infer<typeof FloatingGrant>;
