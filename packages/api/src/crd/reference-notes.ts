// Prose the field reference (docs/reference.md) carries beside the generated tables: what a
// kind is for and the rules that span fields, which the tables (one row per field) cannot say.
import { MAX_GRANT_CIDRS, MAX_GRANTS, MAX_RANGES, WIDEST_FLOATING_PREFIX } from '../floating.js';

const { 6: V6, 4: V4 } = WIDEST_FLOATING_PREFIX;

const POOL = `### Floating ranges and grants

\`pinned\` and \`anycast\` are the pool's floating ranges: a pod asks for an address from them by
annotation (\`flock.fritzlab.net/pinned-ip\`, \`flock.fritzlab.net/anycast\`) and it is announced as
a /128 (/32) from whichever node the pod runs on. A range alone is claimable by nobody: each
grant names the namespaces that may claim from the list (\`namespaceSelector\` on the
namespaces' labels — \`kubernetes.io/metadata.name: NAME\` selects one by name — or
\`anyNamespace: true\`, the insecure pre-grant behaviour: any tenant may take any free
address), optionally narrowed to sub-ranges (\`cidrs\`, inside the list's ranges) and with the
BGP communities those pods may add (\`communities\`). The operator copies ranges and grants into
every NodeConfig of the pool (\`pinnedCIDRs\`, \`pinnedGrants\`, ...); the agent checks them at CNI
ADD and records the owner in an AddressClaim.

The API server refuses a Pool whose floating ranges (at most ${MAX_RANGES} per list, ${MAX_GRANTS}
grants of at most ${MAX_GRANT_CIDRS} ranges each):

| rule | message, e.g. |
| --- | --- |
| overlap within a list (a range listed twice included) | \`pinned range 2001:db8:200::/64 overlaps pinned range 2001:db8:200::/120\` |
| overlap between the lists | \`pinned range 198.51.100.0/28 overlaps anycast range 198.51.100.8/29\` |
| overlap with the pool's node ranges | \`pinned range 2001:db8:100::/120 overlaps the pool's ipv6.cidr 2001:db8:100::/48\` |
| contain a BGP peer's address | \`pinned range 2001:db8:ffff::/120 contains the BGP peer address 2001:db8:ffff::1\` |
| are wider than /${V6} (IPv6) or /${V4} (IPv4) | \`pinned range 2001:db9::/32 is too wide: an IPv6 range must be /${V6} or longer\` |
| have grant ranges outside the list | \`pinned grant range 2001:db8:201::/120 is not inside any pinned range\` |

Overlaps with another Pool's ranges are the operator's to find ([operator.md](operator.md#rules-the-operator-follows)).`;

const ADDRESS_CLAIM = `### Why claims are their own kind

A node prefix belongs to a node; a floating address moves between nodes, so it needs an owner
of its own. An AddressClaim is that owner, one per address, cluster-scoped and named after the
address (\`claimName\`: IPv4 as is, IPv6 as its eight groups of four hex digits joined by \`-\`,
\`2001:db8:200::10\` → \`2001-0db8-0200-0000-0000-0000-0000-0010\`; the API server refuses any
other name, so one address has exactly one possible claim). Creating it is the lock: of two
agents racing for an address the API server lets exactly one create it, and every change of
holder is an update at the resourceVersion that was read. Neither a Pool's or NodeConfig's
status (one writer each, per pool or per node) nor a pod annotation (any pod may write one) can
be that lock; a kind of its own also gets its own RBAC (agents and the operator only) and
\`kubectl get fclaim\` shows who holds what.

A \`Pinned\` claim has one holder, a pod (name and UID); a replacement pod takes the address
over only with the same namespace and \`key\` (the pod annotation \`flock.fritzlab.net/claim-key\`,
else its controller, e.g. \`Deployment/web\`), once the holder's agent has marked it
\`withdrawn\`. An \`Anycast\` claim lists the nodes with member pods (same namespace, same key).
The agents create, update and delete claims (CNI ADD and DEL); the operator's claim GC
releases those whose pods or nodes are gone ([operator.md](operator.md#the-claim-gc)).`;

/** Markdown placed after a kind's heading line. */
export const KIND_NOTES: Record<string, string> = { Pool: POOL, AddressClaim: ADDRESS_CLAIM };
