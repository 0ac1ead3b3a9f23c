// What the chart's ServiceAccounts may and may not do, asked of the real API server with each
// account's own token (`kubectl auth can-i`), and the table of it that docs/operations.md shows.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { kubectl } from '@flock/testkit';
import { REPO } from './support.js';

export type Subject = 'operator' | 'agent';

export interface Check {
  verb: string;
  /** resource[.group] or resource[.group]/name, as kubectl auth can-i takes it. */
  resource: string;
  subresource?: string;
  /** A namespace, '*' for all namespaces, or undefined for cluster-scoped resources. */
  namespace?: string;
  expect: Record<Subject, boolean>;
}

const both = (operator: boolean, agent: boolean) => ({ operator, agent });
const NS = 'flock-system';
const CNP = 'clusternetworkpolicies.policy.networking.k8s.io';
const CLAIMS = 'addressclaims.flock.fritzlab.net';
const PEERSLICES = 'peerslices.flock.fritzlab.net';
const NODEPEERS = 'nodepeers.flock.fritzlab.net';

/** The permissions that matter, with what each account must be allowed. */
export const CHECKS: Check[] = [
  { verb: 'watch', resource: 'nodes', expect: both(true, true) },
  { verb: 'patch', resource: 'nodes', expect: both(false, false) },
  { verb: 'patch', resource: 'nodes', subresource: 'status', expect: both(false, true) },
  { verb: 'delete', resource: 'nodes', expect: both(false, false) },
  { verb: 'update', resource: 'nodes', subresource: 'finalizers', expect: both(true, false) },
  { verb: 'watch', resource: 'pools.flock.fritzlab.net', expect: both(true, false) },
  { verb: 'update', resource: 'pools.flock.fritzlab.net', expect: both(false, false) },
  {
    verb: 'patch',
    resource: 'pools.flock.fritzlab.net',
    subresource: 'status',
    expect: both(true, false),
  },
  { verb: 'watch', resource: 'nodeconfigs.flock.fritzlab.net', expect: both(true, true) },
  { verb: 'create', resource: 'nodeconfigs.flock.fritzlab.net', expect: both(true, false) },
  { verb: 'delete', resource: 'nodeconfigs.flock.fritzlab.net', expect: both(true, false) },
  { verb: 'update', resource: 'nodeconfigs.flock.fritzlab.net', expect: both(true, false) },
  {
    verb: 'patch',
    resource: 'nodeconfigs.flock.fritzlab.net',
    subresource: 'status',
    expect: both(false, true),
  },
  // AddressClaims: the agent claims pinned and anycast addresses and releases them; the
  // operator claims Service addresses, and its GC releases.
  { verb: 'watch', resource: CLAIMS, expect: both(true, true) },
  { verb: 'create', resource: CLAIMS, expect: both(true, true) },
  { verb: 'update', resource: CLAIMS, expect: both(true, true) },
  { verb: 'delete', resource: CLAIMS, expect: both(true, true) },
  { verb: 'patch', resource: CLAIMS, expect: both(false, false) },
  // PeerSlices: the operator watches every pod and publishes what policy needs of each; the
  // agent reads them (and lists only its own node's pods, by a field selector RBAC cannot
  // express).
  { verb: 'get', resource: 'pods', namespace: '*', expect: both(true, true) },
  { verb: 'watch', resource: 'pods', namespace: '*', expect: both(true, true) },
  { verb: 'watch', resource: PEERSLICES, expect: both(true, true) },
  { verb: 'create', resource: PEERSLICES, expect: both(true, false) },
  { verb: 'update', resource: PEERSLICES, expect: both(true, false) },
  { verb: 'delete', resource: PEERSLICES, expect: both(true, false) },
  // NodePeers: the operator publishes each Node's labels and addresses; the agent reads them.
  { verb: 'watch', resource: NODEPEERS, expect: both(true, true) },
  { verb: 'create', resource: NODEPEERS, expect: both(true, false) },
  { verb: 'update', resource: NODEPEERS, expect: both(true, false) },
  { verb: 'delete', resource: NODEPEERS, expect: both(true, false) },
  { verb: 'delete', resource: 'pods', namespace: '*', expect: both(false, false) },
  { verb: 'create', resource: 'pods', namespace: NS, expect: both(false, false) },
  { verb: 'watch', resource: 'namespaces', expect: both(true, true) },
  // Services: the operator writes LoadBalancer addresses into their status and patches its
  // load-balancer-cleanup finalizer onto them (never update); the agent reads them and their
  // EndpointSlices to announce the addresses.
  { verb: 'watch', resource: 'services', namespace: '*', expect: both(true, true) },
  {
    verb: 'patch',
    resource: 'services',
    subresource: 'status',
    namespace: '*',
    expect: both(true, false),
  },
  { verb: 'patch', resource: 'services', namespace: '*', expect: both(true, false) },
  { verb: 'update', resource: 'services', namespace: '*', expect: both(false, false) },
  {
    verb: 'watch',
    resource: 'endpointslices.discovery.k8s.io',
    namespace: '*',
    expect: both(false, true),
  },
  {
    verb: 'watch',
    resource: 'networkpolicies.networking.k8s.io',
    namespace: '*',
    expect: both(false, true),
  },
  {
    verb: 'create',
    resource: 'networkpolicies.networking.k8s.io',
    namespace: '*',
    expect: both(false, false),
  },
  // ClusterNetworkPolicy (optional CRD): both read; only the operator writes, and only status.
  { verb: 'list', resource: CNP, expect: both(true, true) },
  { verb: 'watch', resource: CNP, expect: both(true, true) },
  { verb: 'patch', resource: CNP, subresource: 'status', expect: both(true, false) },
  { verb: 'update', resource: CNP, expect: both(false, false) },
  { verb: 'create', resource: 'events.events.k8s.io', namespace: '*', expect: both(true, true) },
  { verb: 'get', resource: 'secrets', namespace: '*', expect: both(false, false) },
  { verb: 'get', resource: 'secrets', namespace: 'kube-system', expect: both(false, false) },
  // Only the Secret the values name (testdata/cluster-values.yaml: agent.bgpPasswordSecrets).
  { verb: 'get', resource: 'secrets', namespace: NS, expect: both(false, false) },
  { verb: 'get', resource: 'secrets/bgp-tor', namespace: NS, expect: both(false, true) },
  { verb: 'get', resource: 'secrets/other', namespace: NS, expect: both(false, false) },
  { verb: 'list', resource: 'secrets', namespace: NS, expect: both(false, false) },
  {
    verb: 'create',
    resource: 'leases.coordination.k8s.io',
    namespace: NS,
    expect: both(true, false),
  },
  {
    verb: 'update',
    resource: 'leases.coordination.k8s.io/flock-operator',
    namespace: NS,
    expect: both(true, false),
  },
  {
    verb: 'update',
    resource: 'leases.coordination.k8s.io/kube-scheduler',
    namespace: NS,
    expect: both(false, false),
  },
  {
    verb: 'create',
    resource: 'leases.coordination.k8s.io',
    namespace: 'kube-system',
    expect: both(false, false),
  },
  {
    verb: 'create',
    resource: 'clusterrolebindings.rbac.authorization.k8s.io',
    expect: both(false, false),
  },
  {
    verb: 'create',
    resource: 'customresourcedefinitions.apiextensions.k8s.io',
    expect: both(false, false),
  },
];

function args(c: Check): string[] {
  const where = c.namespace === '*' ? ['--all-namespaces'] : c.namespace ? ['-n', c.namespace] : [];
  const sub = c.subresource ? [`--subresource=${c.subresource}`] : [];
  return ['auth', 'can-i', c.verb, c.resource, ...sub, ...where];
}

/** Ask the API server with the account's kubeconfig: true for "yes" (exit 0), false for "no". */
export async function canI(kubeconfig: string, c: Check): Promise<boolean> {
  const r = await kubectl(kubeconfig, args(c), { okCodes: [0, 1] });
  return r.code === 0;
}

export function describeCheck(c: Check): string {
  const where =
    c.namespace === '*' ? ' (all namespaces)' : c.namespace ? ` (in ${c.namespace})` : '';
  const sub = c.subresource ? `/${c.subresource}` : '';
  return `\`${c.verb} ${c.resource}${sub}\`${where}`;
}

export function renderTable(rows: { check: Check; answers: Record<Subject, boolean> }[]): string {
  const yn = (b: boolean) => (b ? 'yes' : 'no');
  return [
    '| may it …                          | operator | agent |',
    '| --------------------------------- | -------- | ----- |',
    ...rows.map(
      (r) => `| ${describeCheck(r.check)} | ${yn(r.answers.operator)} | ${yn(r.answers.agent)} |`,
    ),
  ].join('\n');
}

const DOC = join(REPO, 'docs', 'operations.md');
const BEGIN = '<!-- can-i table: generated by e2e/chart/chart.cluster.test.ts -->';
const END = '<!-- end of can-i table -->';

/** The table as docs/operations.md has it (between its markers). */
export async function documentedTable(): Promise<string> {
  const text = await readFile(DOC, 'utf8');
  const start = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  if (start < 0 || end < start) throw new Error(`${DOC} lacks the can-i table markers`);
  return text.slice(start + BEGIN.length, end).trim();
}

/** Rewrite the documented table (UPDATE_GOLDEN=1). */
export async function writeDocumentedTable(table: string): Promise<void> {
  const text = await readFile(DOC, 'utf8');
  const start = text.indexOf(BEGIN);
  const end = text.indexOf(END);
  if (start < 0 || end < start) throw new Error(`${DOC} lacks the can-i table markers`);
  await writeFile(DOC, `${text.slice(0, start + BEGIN.length)}\n\n${table}\n\n${text.slice(end)}`);
}

/** A markdown table's cells, ignoring alignment padding (prettier re-pads docs tables). */
export function tableCells(table: string): string[][] {
  return table
    .split('\n')
    .filter((l) => l.startsWith('|') && !/^\|\s*-/.test(l))
    .map((l) =>
      l
        .split('|')
        .slice(1, -1)
        .map((c) => c.trim()),
    );
}
