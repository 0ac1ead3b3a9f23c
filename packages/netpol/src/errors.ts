// Errors that say which object and which field are wrong, so an operator can fix the
// NetworkPolicy (or the agent its input) without reading flock's source.

export interface NetpolIssue {
  /** The object, e.g. `networkpolicy ns/name`, `pod ns/name`, `namespace name`, `local[3]`. */
  object: string;
  /** Field path inside the object, e.g. `spec.ingress[0].from[1].ipBlock.cidr` ('' for the object). */
  field: string;
  message: string;
}

export class NetpolError extends Error {
  constructor(readonly issues: readonly NetpolIssue[]) {
    super(issues.map(formatIssue).join('; '));
    this.name = 'NetpolError';
  }
}

export function formatIssue(issue: NetpolIssue): string {
  return issue.field
    ? `${issue.object}: ${issue.field}: ${issue.message}`
    : `${issue.object}: ${issue.message}`;
}

export { formatPath } from '@flock/api';

/** Throw a NetpolError for one object and field. */
export function fail(object: string, field: string, message: string): never {
  throw new NetpolError([{ object, field, message }]);
}
