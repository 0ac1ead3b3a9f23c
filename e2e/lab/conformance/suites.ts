// Which of Kubernetes' own sig-network specs flock runs (docs/conformance.md): ginkgo focus and
// skip regular expressions on the specs' full text, as upstream names them.
import type { PrimaryFamily } from '../core/plan.js';
import { E2E_ALL_BINARY } from './ginkgo.js';

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
  section?: 'loadbalancer' | 'loadbalancer-ipv4' | 'certification' | 'sig-network';
  /**
   * The e2e binary with its specs (default E2E_BINARY, sig-network and sig-api-machinery;
   * E2E_ALL_BINARY: all of test/e2e, built on demand by scripts/build-conformance-all.sh).
   */
  binary?: string;
  /** Ginkgo processes whatever --procs says ([Serial] specs run alone). */
  procs?: number;
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
 * CoreDNS more than the CNI; the one about pods reaching it is the `dns` suite, below, and in
 * `./dev test`; the lab runs CoreDNS, so specs that reach a Service by name work),
 * LoadBalancer/Ingress (no cloud) and the Internet-connectivity specs (no Internet).
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
 * The DNS [Conformance] spec that is about pods reaching the cluster DNS: a pod's two queriers,
 * agnhost (musl upstream) and glibc-dns-testing (glibc), resolve
 * `kubernetes.default.svc.cluster.local` (AAAA on this IPv6-first cluster) with `dig +search`,
 * over UDP and over TCP, from the pod's own resolv.conf: the queries cross flock's pod network
 * and kube-proxy's DNAT of the `kube-dns` Service to CoreDNS on either node; the API server
 * reads the results through the pod proxy.
 */
export const DNS: Suite = {
  name: 'dns',
  about:
    'the DNS [Conformance] spec "should provide DNS for the cluster": dig over UDP and TCP from two images to the kube-dns Service',
  focus: [String.raw`\[sig-network\] DNS should provide DNS for the cluster \[Conformance\]`],
  skip: [],
};

/**
 * An admission-webhook [Conformance] spec: the API server calls a webhook Service. The lab's API
 * server runs off the nodes, as many real control planes do, and reaches the Service's ClusterIP
 * through flock: the Pool announces the Service CIDRs from every node (services.clusterIPs), and
 * kube-proxy there sends it to the webhook's pod. No --enable-aggregator-routing (the spec passes
 * with it too: then the API server dials the pod's address, which the router also has).
 */
export const WEBHOOK: Suite = {
  name: 'webhook',
  about: 'an AdmissionWebhook [Conformance] spec: the API server reaches a webhook served by pods',
  focus: [
    String.raw`\[sig-api-machinery\] AdmissionWebhook .*should be able to deny pod and configmap creation`,
  ],
  skip: [],
};

/**
 * The certification run, as upstream's conformance runs do it: every [Conformance] spec of all of
 * test/e2e, the parallel ones on several ginkgo processes (this suite), then the [Serial] ones
 * alone (CONFORMANCE_SERIAL). Specs this machine cannot run fail and are listed with the evidence
 * in docs/conformance.md, never skipped here.
 */
export const CONFORMANCE: Suite = {
  name: 'conformance',
  about: 'every [Conformance] spec of test/e2e that may run in parallel',
  focus: [String.raw`\[Conformance\]`],
  skip: [{ pattern: String.raw`\[Serial\]`, reason: 'runs alone, in `conformance-serial`' }],
  binary: E2E_ALL_BINARY,
  section: 'certification',
};

/** The [Serial] [Conformance] specs, one at a time (after CONFORMANCE). */
export const CONFORMANCE_SERIAL: Suite = {
  name: 'conformance-serial',
  about: 'every [Serial] [Conformance] spec of test/e2e, one at a time',
  focus: [String.raw`\[Serial\].*\[Conformance\]`],
  skip: [],
  binary: E2E_ALL_BINARY,
  procs: 1,
  section: 'certification',
};

/**
 * The non-disruptive sig-network specs that need only pods, Services, DNS and a CNI, whatever
 * their conformance status: Services, DNS, Networking, Connectivity Pod Lifecycle, HostPort,
 * Proxy and EndpointSlice, [Slow] ones included. Of all of test/e2e's binary, for the images its
 * specs run (nginx, among others: prepare.ts). Left out, each with why: what restarts or
 * reconfigures cluster components, what needs a feature gate the lab leaves at its default,
 * LoadBalancer specs (their own suites), the Internet.
 */
export const SIG_NETWORK: Suite = {
  name: 'sig-network',
  about:
    'the non-disruptive sig-network specs of Services, DNS, Networking, Connectivity Pod Lifecycle, HostPort, Proxy and EndpointSlice',
  focus: [
    String.raw`\[sig-network\] Services `,
    String.raw`\[sig-network\] DNS`,
    String.raw`\[sig-network\] Networking`,
    String.raw`\[sig-network\] Connectivity Pod Lifecycle`,
    String.raw`\[sig-network\] HostPort`,
    String.raw`\[sig-network\] Proxy`,
    String.raw`\[sig-network\] EndpointSlice`,
  ],
  skip: [
    {
      pattern: String.raw`\[Serial\]|\[Disruptive\]`,
      reason: 'serial or disruptive: they restart or reconfigure cluster components',
    },
    {
      pattern: String.raw`\[Feature:|\[Alpha\]`,
      reason:
        'need a feature gate or an environment the lab leaves at its default (dual stack runs in `cni`, SCTP below)',
    },
    {
      pattern: String.raw`LoadBalancer|ESIPP`,
      reason: 'run in `loadbalancer` and `loadbalancer-ipv4`',
    },
    { pattern: String.raw`should provide Internet connection`, reason: 'no Internet here' },
    {
      pattern: String.raw`\[Provider:`,
      reason:
        "a cloud provider's own specs (`[Provider:GCE]`: the framework skips them unless --provider=gce; the lab's provider is local)",
    },
  ],
  binary: E2E_ALL_BINARY,
  section: 'sig-network',
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
  {
    feature: 'the API server calling an admission webhook Service (ClusterIP announced by flock)',
    spec: 'should be able to deny pod and configmap creation',
    prefix: String.raw`\[sig-api-machinery\] AdmissionWebhook .*`,
  },
  {
    feature: 'cluster DNS from pods (UDP and TCP, through kube-dns)',
    spec: 'should provide DNS for the cluster [Conformance]',
    prefix: String.raw`\[sig-network\] DNS `,
  },
];

export function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The subset as one ginkgo suite (TCP only: the UDP and SCTP variants are the full run's). */
export const SUBSET: Suite = {
  name: 'netpol-subset',
  about:
    'one Netpol spec per NetworkPolicy feature, the HostPort, cluster DNS and admission-webhook specs (what `./dev test` runs)',
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
