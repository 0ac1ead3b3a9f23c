// Which of Kubernetes' own sig-network specs flock runs (docs/conformance.md): ginkgo focus and
// skip regular expressions on the specs' full text, as upstream names them.
import type { PrimaryFamily } from '../core/plan.js';

export interface Suite {
  name: string;
  /** What it proves, for docs/conformance.md. */
  about: string;
  focus: string[];
  /** Specs the focus matches that are not run, each with why (docs/conformance.md shows it). */
  skip: { pattern: string; reason: string }[];
  /**
   * The specs reach Service addresses as a client outside the cluster: ginkgo runs in the lab
   * router's namespace, and the namespaces the e2e framework creates under these base names
   * (its `e2e-framework` label) are granted the sample Pool's Service ranges.
   */
  fromRouter?: { frameworks: string[] };
  /** Its results go to a section of docs/conformance.md of its own (default: the main one). */
  section?: 'loadbalancer' | 'loadbalancer-ipv4';
  /** The lab it needs (LabOptions.primaryFamily; default IPv6 first, flock's own). */
  primaryFamily?: PrimaryFamily;
}

/** Specs that need the kernel's SCTP: skipped only when the kernel has none (loadSctp). */
export const SCTP_SPECS = String.raw`\[Feature:SCTPConnectivity\]`;

/** The whole NetworkPolicy suite: test/e2e/network/netpol (Netpol, Netpol [LinuxOnly], Netpol API). */
export const NETPOL: Suite = {
  name: 'netpol',
  about: 'the whole `[sig-network] Netpol` suite (test/e2e/network/netpol), unmodified',
  focus: [String.raw`\[sig-network\] Netpol`],
  skip: [],
};

/**
 * The sig-network specs that test what a CNI plugin does and need nothing but pods, Services
 * (kube-proxy) and the CNI: the [Conformance] granular pod checks, the Service data paths over
 * both families, dual-stack pods and Services, hairpin, UDP conntrack. Not: [Slow], [Serial] and
 * [Disruptive] specs (they restart or reconfigure cluster components), the DNS specs (they test
 * CoreDNS, not the CNI, and probe with an image not built here, glibc-dns-testing; the lab runs
 * CoreDNS, so specs that reach a Service by name work), LoadBalancer/Ingress (no cloud) and the
 * Internet-connectivity specs (no Internet).
 */
export const CNI: Suite = {
  name: 'cni',
  about:
    'sig-network specs that need only pods, Services and the CNI: granular pod and Service checks, dual stack, hairpin, conntrack',
  focus: [
    String.raw`\[sig-network\] Networking Granular Checks: Pods`,
    String.raw`\[sig-network\] Networking Granular Checks: Services`,
    String.raw`\[sig-network\] \[Feature:IPv6DualStack\]`,
    String.raw`\[sig-network\] Services should allow pods to hairpin back to themselves through services`,
    String.raw`\[sig-network\] Conntrack`,
    String.raw`\[sig-network\] HostPort`,
  ],
  skip: [
    {
      pattern: String.raw`\[Slow\]|\[Serial\]|\[Disruptive\]`,
      reason: 'slow, serial or disruptive (they restart or reconfigure cluster components)',
    },
    {
      pattern: String.raw`invalid conntrack state bug`,
      reason:
        'its server image (regression-issue-74839) is not built here; it tests kube-proxy, not the CNI',
    },
  ],
};

export const ALL_SUITES: readonly Suite[] = [NETPOL, CNI];

/** The HostPort conformance spec alone (flock's native hostPort, docs/install.md). */
export const HOSTPORT: Suite = {
  name: 'hostport',
  about: 'the HostPort [Conformance] spec: same hostPort, other hostIP or protocol, on one node',
  focus: [String.raw`\[sig-network\] HostPort`],
  skip: [],
};

/**
 * A spec that needs a cloud load balancer: one that balances each connection on its own and
 * still keeps a client on one endpoint when the Service asks for ClientIP affinity. A router's
 * ECMP hashes every flow the same way, whatever the Service: by address (as the lab's router,
 * Linux's default), a client reaches one node; by ports too, the affinity specs fail instead.
 */
const CLOUD_AFFINITY_SKIP = {
  pattern: String.raw`should be able to switch session affinity for LoadBalancer service with Local traffic policy`,
  reason:
    "needs a cloud load balancer that honours each Service's affinity: after ClientIP affinity is switched off it expects one client's connections to reach several endpoints, but a Local Service's node answers only with its own endpoint (one per node here) and the router's ECMP sends one client to one node (hashing by address, as ClientIP affinity across nodes needs; hashing ports too breaks the affinity specs instead)",
};

/** The LoadBalancer specs that assume IPv4 first; the IPv4-first suite runs them. */
const IPV4_FIRST_SPECS = [
  {
    pattern: String.raw`ExternalTrafficPolicy: Local .*should only target nodes with endpoints`,
    reason:
      "expects kube-proxy's health check of the (single-stack) Service on every InternalIP of a node; kube-proxy serves it only in the Service's family (pkg/proxy/healthcheck/service_health.go), so on dual-stack nodes the other family's address never answers; runs in `loadbalancer-ipv4`",
  },
  {
    pattern: String.raw`should only allow access from service loadbalancer source ranges`,
    reason:
      'probes from pods with `wget -T 5 -qO- ADDRESS`, the address unbracketed: no wget takes "2001:db8:400::4" for an IPv6 host (GNU wget looks up a host "2001", exit 4; busybox reads the last group as a port), so on an IPv6-first cluster the probe fails before any packet is sent; runs in `loadbalancer-ipv4`',
  },
  {
    pattern: String.raw`ExternalTrafficPolicy: Local .*should work from pods`,
    reason:
      'reads the client address as strings.Split(stdout, ":")[0], which is "[2001" for an IPv6 client: it cannot pass on a cluster whose first family is IPv6, as the lab\'s is; runs in `loadbalancer-ipv4`',
  },
];

/**
 * Kubernetes' own LoadBalancer specs (test/e2e/network/loadbalancer.go), [Slow] ones included:
 * flock's operator gives the Services their addresses, the agents announce them to the router,
 * kube-proxy delivers them; the specs connect from the router, where clients outside the
 * cluster come from. Not in the default run (it needs a router client, and takes long).
 */
export const LOADBALANCER: Suite = {
  name: 'loadbalancer',
  about:
    "Kubernetes' own `[Feature:LoadBalancer]` specs (test/e2e/network/loadbalancer.go), `[Slow]` included, connecting from the router",
  focus: [String.raw`\[Feature:LoadBalancer\]`],
  skip: [...IPV4_FIRST_SPECS, CLOUD_AFFINITY_SKIP],
  // The framework names of loadbalancer.go's two Describes ("LoadBalancers" and
  // "LoadBalancers ExternalTrafficPolicy: Local").
  fromRouter: { frameworks: ['loadbalancers', 'esipp'] },
  section: 'loadbalancer',
};

/**
 * The same specs on a lab whose first family is IPv4 and whose Nodes have IPv4 addresses only
 * (the clusters upstream runs them on): those LOADBALANCER leaves out for IPv6 run here.
 */
export const LOADBALANCER_IPV4: Suite = {
  ...LOADBALANCER,
  name: 'loadbalancer-ipv4',
  about:
    "the same `[Feature:LoadBalancer]` specs on an IPv4-first lab (Service ranges and the API server's address IPv4 first, Nodes with IPv4 InternalIPs only; pods and flock's announcements still dual-stack)",
  skip: [CLOUD_AFFINITY_SKIP],
  section: 'loadbalancer-ipv4',
  primaryFamily: 'IPv4',
};

/**
 * `./dev test`'s focused subset (e2e/lab/scenarios/conformance.cluster.test.ts): one upstream
 * spec per NetworkPolicy feature. endPort has no connectivity spec upstream since it went GA
 * (only the API validation spec); flock's own tests probe it (packages/netpol kernel tier).
 */
export const POLICY_SUBSET: { feature: string; spec: string }[] = [
  { feature: 'default deny (ingress)', spec: "should support a 'default-deny-ingress' policy" },
  {
    feature: 'default deny (ingress and egress)',
    spec: "should support a 'default-deny-all' policy",
  },
  {
    feature: 'pod and namespace selectors',
    spec: 'should enforce policy based on PodSelector and NamespaceSelector',
  },
  { feature: 'egress', spec: 'should deny egress from pods based on PodSelector' },
  {
    feature: 'ipBlock with except',
    spec: 'should enforce except clause while egress access to server in CIDR block',
  },
  { feature: 'ports', spec: 'should enforce policy based on Ports' },
  { feature: 'named ports', spec: 'should allow ingress access on one named port' },
  {
    feature: 'endPort (API)',
    spec: 'should support creating NetworkPolicy API with endport field',
  },
  { feature: 'policy updates', spec: 'should enforce updated policy' },
];

/** `./dev test`'s other upstream specs: what flock itself must do beyond NetworkPolicy. */
export const CNI_SUBSET: { feature: string; spec: string; prefix: string }[] = [
  {
    feature: 'hostPort',
    spec: 'validates that there is no conflict between pods with same hostPort but different hostIP and protocol',
    prefix: String.raw`\[sig-network\] HostPort .*`,
  },
];

export function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The subset as one ginkgo suite (TCP only: the UDP and SCTP variants are the full run's). */
export const SUBSET: Suite = {
  name: 'netpol-subset',
  about: 'one Netpol spec per NetworkPolicy feature and the HostPort spec (what `./dev test` runs)',
  focus: [
    ...POLICY_SUBSET.map(
      (s) =>
        String.raw`\[sig-network\] Netpol (API |NetworkPolicy between server and client ).*` +
        escapeRegExp(s.spec),
    ),
    ...CNI_SUBSET.map((s) => s.prefix + escapeRegExp(s.spec)),
  ],
  skip: [
    {
      pattern: String.raw`\[sig-network\] Netpol .*\[LinuxOnly\]`,
      reason: 'the UDP and SCTP variants run in the full suite',
    },
  ],
};
