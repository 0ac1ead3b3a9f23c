// translate(state) → IR: which local pods each NetworkPolicy isolates, and for each of them the
// allow rules of every policy selecting it, with peers and ports resolved into named sets.
// Pure: the same state always gives the same IR. Cost is linear in policies selecting local
// pods × the pods their peers select; selector results and peer sets are computed once.
import { matchesSelector, type Family } from '@flock/api';
import { addressInterval, formatAddress } from './addresses.js';
import { Cluster, type PodInfo } from './cluster.js';
import { clusterPolicyViews } from './cluster-policy.js';
import { fail } from './errors.js';
import type { DirectionIR, LocalPodIR, NetpolIR, RuleIR } from './ir.js';
import { hostPortElements } from './host-ports.js';
import { invalidate } from './invalidate.js';
import { SetCache } from './sets.js';
import { TierCache, type Selection } from './tiers.js';
import type { LocalPod, NetworkPolicy, Peer, State } from './state.js';
import { Translator, type Direction, type RuleView } from './translator.js';

interface PolicyView {
  key: string;
  policy: NetworkPolicy;
  ingress: boolean;
  egress: boolean;
}

interface LocalView {
  entry: LocalPod;
  info: PodInfo;
  ingress: PolicyView[];
  egress: PolicyView[];
  /** ClusterNetworkPolicies whose subject selects the pod, in order of evaluation. */
  cluster?: Selection;
}

/** policyTypes defaulting of networking.k8s.io/v1: Ingress always, Egress if there are egress rules. */
export function effectiveTypes(policy: NetworkPolicy): { ingress: boolean; egress: boolean } {
  const types = policy.spec.policyTypes;
  if (!types || types.length === 0)
    return { ingress: true, egress: (policy.spec.egress?.length ?? 0) > 0 };
  return { ingress: types.includes('Ingress'), egress: types.includes('Egress') };
}

/** Absent or empty `from` / `to`: any address. */
const anyIfEmpty = (peers: Peer[] | null | undefined) => (peers?.length ? peers : undefined);

function rulesOf(policy: NetworkPolicy, direction: Direction): RuleView[] {
  if (direction === 'ingress')
    return (policy.spec.ingress ?? []).map((r) => ({
      peers: anyIfEmpty(r.from),
      ports: r.ports ?? [],
    }));
  return (policy.spec.egress ?? []).map((r) => ({ peers: anyIfEmpty(r.to), ports: r.ports ?? [] }));
}

/** A pod's rules of one direction, every tier; undefined when no policy of any tier selects it. */
function directionOf(
  translator: Translator,
  tiers: TierCache,
  local: LocalView,
  direction: Direction,
): DirectionIR | undefined {
  const isolating = local[direction];
  const tier = (t: 'Admin' | 'Baseline') =>
    local.cluster ? tiers.tier(translator, local.cluster, direction, t) : undefined;
  // In order of evaluation, so that sets are named in that order too.
  const admin = tier('Admin');
  const rules: RuleIR[] = [];
  for (const view of isolating) {
    const owner = { key: view.key, namespace: view.policy.metadata.namespace };
    rulesOf(view.policy, direction).forEach((rule, index) => {
      const comment = `${view.key} ${direction}[${index}]`;
      rules.push(...translator.rule(owner, direction, comment, rule, local.info));
    });
  }
  // NetworkPolicy decides for the pods it isolates: the Baseline tier is never reached.
  const baseline = isolating.length === 0 ? tier('Baseline') : undefined;
  if (isolating.length === 0 && !admin && !baseline) return undefined;
  return {
    policies: isolating.map((p) => p.key),
    rules,
    ...(admin ? { admin } : {}),
    ...(baseline ? { baseline } : {}),
  };
}

type Sources = { v4: string[]; v6: string[] };
// A function of the pod (its addresses and annotations) and of the anycast list the agent gives:
// kept, as formatting every local pod's addresses again is a part of every change.
const SOURCES = new WeakMap<PodInfo, { given: string[] | undefined; sources: Sources }>();

function sourcesOf(cluster: Cluster, local: LocalView): Sources {
  const hit = SOURCES.get(local.info);
  if (hit && hit.given === local.entry.anycast) return hit.sources;
  const sources = computeSources(cluster, local);
  SOURCES.set(local.info, { given: local.entry.anycast, sources });
  return sources;
}

function computeSources(cluster: Cluster, local: LocalView): Sources {
  const all: { family: Family; n: bigint }[] = [...local.info.addresses];
  for (const ip of cluster.anycastOf(local.info, local.entry.anycast)) {
    const parsed = addressInterval(ip);
    if (parsed) all.push({ family: parsed.family, n: parsed.interval.lo });
  }
  const text = (family: Family) =>
    [...new Set(all.filter((a) => a.family === family).map((a) => a.n))]
      .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
      .map((n) => formatAddress(n, family));
  return { v4: text(4), v6: text(6) };
}

function localViews(state: State, cluster: Cluster): LocalView[] {
  const byInterface = new Map<string, LocalView>();
  const byPod = new Set<string>();
  state.local.forEach((entry, i) => {
    const key = `${entry.namespace}/${entry.name}`;
    const info = cluster.pod(entry.namespace, entry.name);
    if (!info) fail(`local pod ${key}`, `local[${i}]`, 'no such pod in the state');
    if (byPod.has(key)) fail(`local pod ${key}`, `local[${i}]`, 'listed twice');
    if (byInterface.has(entry.interface))
      fail(
        `local pod ${key}`,
        `local[${i}].interface`,
        `${entry.interface} is used by another local pod`,
      );
    byPod.add(key);
    byInterface.set(entry.interface, { entry, info, ingress: [], egress: [] });
  });
  return [...byInterface.values()].sort((a, b) => (a.entry.interface < b.entry.interface ? -1 : 1));
}

function translateWith(
  state: State,
  cluster: Cluster,
  cache: SetCache,
  tiers: TierCache,
  peersJson: (peers: Peer[]) => string,
): NetpolIR {
  const locals = localViews(state, cluster);
  const localsByNamespace = new Map<string, LocalView[]>();
  for (const l of locals) {
    const list = localsByNamespace.get(l.info.namespace) ?? [];
    list.push(l);
    localsByNamespace.set(l.info.namespace, list);
  }
  const policies: PolicyView[] = state.policies
    .map((policy) => ({
      key: `${policy.metadata.namespace}/${policy.metadata.name}`,
      policy,
      ...effectiveTypes(policy),
    }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
  const seen = new Set<string>();
  for (const view of policies) {
    if (seen.has(view.key)) fail(`networkpolicy ${view.key}`, 'metadata.name', 'listed twice');
    seen.add(view.key);
    if (!cluster.hasNamespace(view.policy.metadata.namespace)) {
      fail(
        `networkpolicy ${view.key}`,
        'metadata.namespace',
        "namespace is not in the state's namespaces",
      );
    }
    for (const local of localsByNamespace.get(view.policy.metadata.namespace) ?? []) {
      if (!matchesSelector(view.policy.spec.podSelector, local.info.labels)) continue;
      if (view.ingress) local.ingress.push(view);
      if (view.egress) local.egress.push(view);
    }
  }
  const clusterPolicies = clusterPolicyViews(state.clusterPolicies);
  const names = new Set<string>();
  for (const view of clusterPolicies) {
    if (names.has(view.name))
      fail(`clusternetworkpolicy ${view.name}`, 'metadata.name', 'listed twice');
    names.add(view.name);
  }
  tiers.begin(cluster, clusterPolicies);
  if (clusterPolicies.length > 0) {
    for (const local of locals) {
      const labels = cluster.namespaceLabels.get(local.info.namespace) ?? {};
      local.cluster = tiers.select(local.info, labels);
    }
  }
  const translator = new Translator(cluster, cache, peersJson);
  const pods = locals.map((local): LocalPodIR => {
    const ingress = directionOf(translator, tiers, local, 'ingress');
    const egress = directionOf(translator, tiers, local, 'egress');
    const hostPorts = hostPortElements(local.entry.hostPorts ?? [], local.info.addresses);
    return {
      pod: local.info.key,
      interface: local.entry.interface,
      sources: sourcesOf(cluster, local),
      ...(ingress ? { ingress } : {}),
      ...(egress ? { egress } : {}),
      ...(hostPorts ? { hostPorts } : {}),
    };
  });
  tiers.end();
  return translator.ir(pods);
}

/**
 * translate() that keeps what it computed for the next state: the parsed pods (by object), the
 * selector results and the set contents, so that a change costs what it touches — a pod change
 * recomputes only the sets that select the pod. The IR is exactly translate()'s for the same
 * state (a property test holds the two together). Objects of a state are read as immutable:
 * pass a new object for whatever changed, as the agent's caches do.
 */
export class IncrementalTranslator {
  private cluster: Cluster | undefined;
  private readonly cache = new SetCache();
  private readonly tiers: TierCache;
  private readonly json = new WeakMap<Peer[], string>();

  /** `{ tierCache: false }`: ClusterNetworkPolicy tiers are walked again on every state (benchmarks). */
  constructor(options: { tierCache?: boolean } = {}) {
    this.tiers = new TierCache(options.tierCache ?? true);
  }

  translate(state: State): NetpolIR {
    try {
      if (!this.cluster) this.cluster = new Cluster(state);
      else invalidate(this.cache, this.cluster.update(state), this.cluster);
      return translateWith(state, this.cluster, this.cache, this.tiers, this.peersJson);
    } catch (error) {
      this.reset();
      throw error;
    }
  }

  /** Forget everything: the next state is translated from scratch. */
  reset(): void {
    this.cluster = undefined;
    this.cache.clear();
  }

  private readonly peersJson = (peers: Peer[]): string => {
    let hit = this.json.get(peers);
    if (hit === undefined) this.json.set(peers, (hit = JSON.stringify(peers)));
    return hit;
  };
}

/** The policy IR of this node's pods. Throws NetpolError on input it cannot enforce. */
export function translate(state: State): NetpolIR {
  return translateWith(state, new Cluster(state), new SetCache(), new TierCache(), (peers) =>
    JSON.stringify(peers),
  );
}
