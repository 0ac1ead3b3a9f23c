// API group, version, kinds, and every label and annotation name flock reads or writes.
// Existing clusters already use these exact names: never rename them.

export const GROUP = 'flock.fritzlab.net';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;

export const POOL_KIND = 'Pool';
export const POOL_PLURAL = 'pools';
export const NODECONFIG_KIND = 'NodeConfig';
export const NODECONFIG_PLURAL = 'nodeconfigs';
export const ADDRESSCLAIM_KIND = 'AddressClaim';
export const ADDRESSCLAIM_PLURAL = 'addressclaims';
export const PEERSLICE_KIND = 'PeerSlice';
export const PEERSLICE_PLURAL = 'peerslices';
export const NODEPEER_KIND = 'NodePeer';
export const NODEPEER_PLURAL = 'nodepeers';

/** Node label: "false" keeps the flock agent off a node (the chart's DaemonSet affinity honours it). */
export const AGENT_LABEL = `${GROUP}/agent`;
/** Interface-ID algorithm for IPv6 pod addresses; on a Pod, or on a NodeConfig as the node default. */
export const IP_ALGO_ANNOTATION = `${GROUP}/ip-algo`;
/** Pod annotation: the pinned address(es) the pod keeps wherever it runs ("IP" or "IPv6,IPv4"). */
export const PINNED_IP_ANNOTATION = `${GROUP}/pinned-ip`;
/**
 * Pod annotation: `public` asks for a public IPv4 address (under a Pool's ipv4.assign:
 * OnRequest, from a namespace its grants name); `none` asks for no IPv4 at all.
 */
export const IPV4_ANNOTATION = `${GROUP}/ipv4`;
/** Pod annotation: comma-separated anycast addresses the pod serves (put on its `lo`, announced while Ready). */
export const ANYCAST_ANNOTATION = `${GROUP}/anycast`;
/** Pod annotation: comma-separated BGP communities ("A:B", "A:B:C") added to the pod's own announcements, from the Pool's allowedPodCommunities. */
export const BGP_COMMUNITIES_ANNOTATION = `${GROUP}/bgp-communities`;
/**
 * Pod annotation: the owner key of the pod's pinned and anycast claims (default: its
 * controller, e.g. Deployment/web). A pinned address passes only to a pod of the same
 * namespace and key; anycast pods of one namespace and key share their addresses.
 */
export const CLAIM_KEY_ANNOTATION = `${GROUP}/claim-key`;
/**
 * Service annotation: comma-separated addresses the LoadBalancer Service asks for (at most one
 * per family), from a range a Pool's services.grants give its namespace. Wins over the
 * deprecated spec.loadBalancerIP.
 */
export const LOAD_BALANCER_IPS_ANNOTATION = `${GROUP}/load-balancer-ips`;
/**
 * Service annotation: the sharing key. LoadBalancer Services of one namespace with the same key
 * may share an address (when no two of them use the same protocol and port); default
 * `Service/<name>`, i.e. no sharing.
 */
export const SHARING_KEY_ANNOTATION = `${GROUP}/sharing-key`;
/** spec.loadBalancerClass of the Services flock gives addresses to (and unset ones, by default). */
export const LOAD_BALANCER_CLASS = `${GROUP}/lb`;
/** Field manager names used for server-side apply. */
export const OPERATOR_FIELD_MANAGER = 'flock-operator';
export const AGENT_FIELD_MANAGER = 'flock-agent';
/** Node condition the agent keeps False once the node's network is wired. */
export const NETWORK_UNAVAILABLE_REASON = 'FlockReady';
