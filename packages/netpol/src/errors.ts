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

/** Format a path like ['spec', 'ingress', 0, 'from'] as `spec.ingress[0].from`. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else if (typeof key === 'string' && /^[A-Za-z_][A-Za-z0-9_]*$/.test(key))
      out += out ? `.${key}` : key;
    else out += `[${JSON.stringify(String(key))}]`;
  }
  return out;
}

/** Throw a NetpolError for one object and field. */
export function fail(object: string, field: string, message: string): never {
  throw new NetpolError([{ object, field, message }]);
}
