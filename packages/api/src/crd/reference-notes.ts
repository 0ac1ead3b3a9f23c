// Prose the field reference (docs/reference.md) carries beside the generated tables: what a
// kind is for and the rules that span fields, which the tables (one row per field) cannot say.
import {
  MAX_CLUSTER_IP_RANGES,
  MAX_GRANT_CIDRS,
  MAX_GRANTS,
  MAX_RANGES,
  WIDEST_FLOATING_PREFIX,
} from '../floating.js';

import { DEFAULT_IPV4_NODE_PREFIX } from '../ipv4.js';
import { DEFAULT_NAT64_POOL, NAT64_WELL_KNOWN_PREFIX } from '../nat64.js';

const { 6: V6, 4: V4 } = WIDEST_FLOATING_PREFIX;

const POOL = `### IPv4: who gets it, and what kind

\`ipv4.assign\` says which pods get an IPv4 address from their node's slice: \`Always\` (every pod,
the default) or \`OnRequest\` (only a pod with the annotation \`flock.fritzlab.net/ipv4: public\`, of
a namespace \`ipv4.grants\` names; the others are IPv6-only, so the slice bounds only the IPv4
pods). \`ipv4.mode\` says what the addresses are: \`Public\` (announced, routable) or \`Private\`
(never announced; translated to the node's IPv4 address for destinations outside \`ipv4.cidr\`;
\`assign\` must then be \`Always\`). \`nodePrefixLength\` defaults to ${DEFAULT_IPV4_NODE_PREFIX.Public}
for Public and ${DEFAULT_IPV4_NODE_PREFIX.Private} for Private. A pod annotated
\`flock.fritzlab.net/ipv4: none\` gets no IPv4 in any mode. The operator copies assign, grants and
mode into each NodeConfig's \`ipv4\`; [install.md](install.md#ipv4-modes) says how to choose.

\`nat64\` (with or without \`ipv4\`) gives the pods without an IPv4 address a way to IPv4: each
node runs a NAT64 translator (Tayga) for \`nat64.prefix\` (a /96, default the well-known
\`${NAT64_WELL_KNOWN_PREFIX}\`), translates to its own \`nat64.pool\` (default \`${DEFAULT_NAT64_POOL}\`, node-local)
and masquerades that to the node's IPv4 address. The prefix is not announced: the router needs
nothing but a routable node address. DNS64 (CoreDNS's \`dns64\` plugin with the same prefix)
names the destinations. Nothing translated reaches the cluster's own IPv4 ranges, which the
operator lists in each NodeConfig's \`nat64.clusterCIDRs\`.

### Floating ranges and grants

\`pinned\`, \`anycast\` and \`services\` are the pool's floating ranges: a pod asks for an address
from the first two by annotation (\`flock.fritzlab.net/pinned-ip\`, \`flock.fritzlab.net/anycast\`)
and it is announced as a /128 (/32) from whichever node the pod runs on; the operator gives
LoadBalancer Services addresses from the third (below). A range alone is claimable by nobody: each
grant names the namespaces that may claim from the list (\`namespaceSelector\` on the
namespaces' labels — \`kubernetes.io/metadata.name: NAME\` selects one by name — or
\`anyNamespace: true\`, the insecure pre-grant behaviour: any tenant may take any free
address), optionally narrowed to sub-ranges (\`cidrs\`, inside the list's ranges) and with the
BGP communities those pods may add (\`communities\`). The operator copies ranges and grants into
every NodeConfig of the pool (\`pinnedCIDRs\`, \`pinnedGrants\`, ...); the agent checks them at CNI
ADD and records the owner in an AddressClaim.

The API server refuses a Pool whose floating ranges (at most ${MAX_RANGES} per list, ${MAX_GRANTS}
grants of at most ${MAX_GRANT_CIDRS} ranges each) or clusterIPs (at most ${MAX_CLUSTER_IP_RANGES}):

| rule | message, e.g. |
| --- | --- |
| overlap within a list (a range listed twice included) | \`pinned range 2001:db8:200::/64 overlaps pinned range 2001:db8:200::/120\` |
| overlap between the lists | \`pinned range 198.51.100.0/28 overlaps anycast range 198.51.100.8/29\` |
| overlap with the pool's node ranges | \`pinned range 2001:db8:100::/120 overlaps the pool's ipv6.cidr 2001:db8:100::/48\` |
| contain a BGP peer's address | \`pinned range 2001:db8:ffff::/120 contains the BGP peer address 2001:db8:ffff::1\` |
| are wider than /${V6} (IPv6) or /${V4} (IPv4) | \`pinned range 2001:db9::/32 is too wide: an IPv6 range must be /${V6} or longer\` |
| have grant ranges outside the list | \`pinned grant range 2001:db8:201::/120 is not inside any pinned range\` |
| select Services outside \`services.grants\` | \`pinned.grants[].serviceSelector: only services.grants select Services\` |
| clusterIPs overlapping a node or floating range | \`services.clusterIPs range 2001:db8:400::/112 overlaps services range 2001:db8:400::/120\` |

Overlaps with another Pool's ranges are the operator's to find ([operator.md](operator.md#rules-the-operator-follows)).

### Service addresses: why they are a Pool field

A LoadBalancer Service's address is one more floating address: a /128 (/32) that the nodes of a
pool announce over their BGP sessions, owned by one owner at a time. Everything it needs is
already the Pool's: the nodes that announce it (\`nodeSelector\`), the sessions and peers it goes
out on, the communities the routers act on (\`bgp.communities.services\`), the validation that
keeps floating ranges apart from node ranges, peers and each other — within one Pool by the API
server, across Pools by the operator. A kind of its own (as MetalLB's IPAddressPool or Cilium's
CiliumLoadBalancerIPPool) would repeat all of that and still have to be checked against every
Pool; as a field, every floating range of the cluster is in one place and one set of rules
keeps them apart.

\`services.cidrs\` are the ranges; \`services.grants\` say which namespaces may get addresses
from them (\`namespaceSelector\` or \`anyNamespace\`, as for pods) and, with \`serviceSelector\`,
which of their Services (only here: the API server refuses it in the other lists). The operator
assigns the addresses (to Services of \`type: LoadBalancer\` whose \`loadBalancerClass\` is
\`flock.fritzlab.net/lb\`, or unset), records each in an AddressClaim of kind \`Service\`, and
writes it into the Service's \`status.loadBalancer.ingress\`; kube-proxy delivers the traffic on
every node. \`services.clusterIPs\` are the cluster's Service CIDRs, which every node of the pool
announces as they are (Calico's \`serviceClusterIPs\`), so machines outside the cluster reach
ClusterIPs through kube-proxy on any node. The NodeConfigs carry both (\`serviceCIDRs\`,
\`clusterIPCIDRs\`): the agents need the ranges, the assignment is the operator's
([operator.md](operator.md#service-addresses)).

| | flock | MetalLB | Cilium LB-IPAM | Calico |
| --- | --- | --- | --- | --- |
| ranges | \`Pool.spec.services.cidrs\` | \`IPAddressPool.spec.addresses\` | \`CiliumLoadBalancerIPPool.spec.blocks\` | an \`IPPool\` with \`allowedUses: [LoadBalancer]\` |
| who may get one | \`services.grants\`: namespaces by label and Services by \`serviceSelector\`; nobody without a grant | \`serviceAllocation\` (namespaces, namespaceSelectors, serviceSelectors, priority); any Service without it | \`serviceSelector\` (the namespace as label \`io.kubernetes.service.namespace\`); any Service without it | any Service |
| ask for one | annotation \`flock.fritzlab.net/load-balancer-ips\`, else \`spec.loadBalancerIP\` | \`metallb.io/loadBalancerIPs\` | \`lbipam.cilium.io/ips\` | \`projectcalico.org/loadBalancerIPs\` |
| share one | \`flock.fritzlab.net/sharing-key\` (same namespace, no port twice) | \`metallb.io/allow-shared-ip\` | \`lbipam.cilium.io/sharing-key\` | — |
| which Services | class \`flock.fritzlab.net/lb\`, and unset (\`--serve-unset-lb-class\`) | unset, or the class of its \`--lb-class\` | unset, \`io.cilium/bgp-control-plane\`, \`io.cilium/l2-announcer\` | \`type: LoadBalancer\` |
| announced by | the pool's nodes, on their own BGP sessions | MetalLB's speaker, on its own sessions (\`BGPAdvertisement\`) | Cilium's BGP control plane | the nodes' BIRD (\`BGPConfiguration.spec.serviceLoadBalancerIPs\`) |
| who holds what | one AddressClaim per address (a lock), quarantined after release | the Services' status | the Services' status | Calico's IPAM blocks |
| ClusterIPs announced | \`services.clusterIPs\` | — | by a \`CiliumBGPAdvertisement\` of ClusterIPs | \`BGPConfiguration.spec.serviceClusterIPs\` |`;

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
releases those whose pods or nodes are gone ([operator.md](operator.md#the-claim-gc)).

A \`Service\` claim is the operator's: it has no holders but lists the LoadBalancer Services (of
\`spec.namespace\`) that use the address in \`services\` — several only when they share it: the
same sharing key (the Service annotation \`flock.fritzlab.net/sharing-key\`, else
\`Service/<name>\`: no sharing) and no protocol and port twice. When the last Service lets the
address go, the claim stays with \`services\` empty and \`releasedAt\` set: the address's
quarantine. No other owner gets the address before \`releasedAt\` plus the operator's
\`--service-address-quarantine\` (5 m); the same namespace and key may take it back at once (a
Service deleted and created again keeps its address). Then the claim GC deletes it.`;

/** Markdown placed after a kind's heading line. */
export const KIND_NOTES: Record<string, string> = { Pool: POOL, AddressClaim: ADDRESS_CLAIM };
