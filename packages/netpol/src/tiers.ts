// The ClusterNetworkPolicy tiers of translate(): for one local pod and direction, the rules of the
// Admin (or Baseline) policies whose subject selects it. A TierCache keeps between states what
// a one-pod change leaves alone, so that such a change does not walk every cluster rule of every
// local pod again:
//   - which policies select each local pod (by pod object, namespace labels and policy list);
//   - each cluster rule's plan (set keys, ports), until the nodes change (node peers' keys);
//   - each tier's IR by what it is made of (the selecting policies, and the pod's named ports
//     when an ingress rule names one), shared by every pod with the same rules: built once per
//     state at its first use (so sets are named in the same order as without the cache), and
//     kept as the previous state's object when equal to it, which renderTable and diffTables
//     recognise without comparing lines.
// A cache can only make translate() faster: a tier is rebuilt, or reused because it is equal.
import type { Cluster, PodInfo } from './cluster.js';
import { subjectSelects, type ClusterPolicyView, type ClusterRuleView } from './cluster-policy.js';
import type { RuleIR, TierIR } from './ir.js';
import type { Direction, RulePlan, Translator } from './translator.js';

type Tier = 'Admin' | 'Baseline';

/** The cluster policies that select one local pod, in order of evaluation. */
export interface Selection {
  info: PodInfo;
  namespaceLabels: Record<string, string>;
  views: ClusterPolicyView[];
  /** Tier keys by tier and direction (null: no policy of the tier has rules there). */
  keys: Map<string, string | null>;
}

interface TierEntry {
  tier: TierIR;
  /** The translate() pass that last built or checked it. */
  pass: number;
}

const sameRule = (a: RuleIR, b: RuleIR): boolean =>
  a.kind === b.kind &&
  a.comment === b.comment &&
  a.action === b.action &&
  (a.kind === 'tuples'
    ? b.kind === 'tuples' && a.tuples === b.tuples
    : b.kind === 'allow' && a.peers === b.peers && a.except === b.except && a.ports === b.ports);

function sameTier(a: TierIR, b: TierIR): boolean {
  return (
    a.policies.length === b.policies.length &&
    a.policies.every((p, i) => p === b.policies[i]) &&
    a.rules.length === b.rules.length &&
    a.rules.every((r, i) => sameRule(r, b.rules[i] as RuleIR))
  );
}

const hasNamedPort = (rule: ClusterRuleView) => rule.ports.some((p) => typeof p.port === 'string');

export class TierCache {
  private cluster: Cluster | undefined;
  private nodesVersion = -1;
  private views: readonly ClusterPolicyView[] = [];
  private plans = new WeakMap<ClusterRuleView, RulePlan>();
  private readonly selections = new Map<string, Selection>();
  private readonly tiers = new Map<string, TierEntry>();
  private pass = 0;
  private readonly seen = new Set<string>();
  /** Disabled: every pass computes everything again (for benchmarks: the cost without it). */
  constructor(private readonly enabled = true) {}

  /** Start a pass over a state: forget what its cluster, nodes or policy list make stale. */
  begin(cluster: Cluster, views: readonly ClusterPolicyView[]): void {
    this.pass++;
    this.seen.clear();
    if (!this.enabled || cluster !== this.cluster || cluster.nodesVersion !== this.nodesVersion) {
      this.cluster = cluster;
      this.nodesVersion = cluster.nodesVersion;
      this.plans = new WeakMap();
    }
    if (
      !this.enabled ||
      views.length !== this.views.length ||
      views.some((v, i) => v !== this.views[i])
    )
      this.selections.clear();
    this.views = views;
    if (!this.enabled) this.tiers.clear();
  }

  /** Drop what the pass did not use (pods gone, tiers no pod has any more). */
  end(): void {
    for (const [key, entry] of this.tiers) if (entry.pass !== this.pass) this.tiers.delete(key);
    for (const key of this.selections.keys()) if (!this.seen.has(key)) this.selections.delete(key);
  }

  /** The policies whose subject selects a local pod (namespaceLabels: of its namespace). */
  select(info: PodInfo, namespaceLabels: Record<string, string>): Selection {
    this.seen.add(info.key);
    const hit = this.selections.get(info.key);
    if (hit && hit.info === info && hit.namespaceLabels === namespaceLabels) return hit;
    const views = this.views.filter((v) => subjectSelects(v, info, namespaceLabels));
    const s: Selection = { info, namespaceLabels, views, keys: new Map() };
    this.selections.set(info.key, s);
    return s;
  }

  /** The rules of every policy of one tier that selects the pod, in order; undefined if none. */
  tier(
    translator: Translator,
    selection: Selection,
    direction: Direction,
    tier: Tier,
  ): TierIR | undefined {
    const key = this.key(selection, direction, tier);
    if (key === null) return undefined;
    const hit = this.tiers.get(key);
    if (hit && hit.pass === this.pass) return hit.tier; // its sets are named already
    const built = this.build(translator, selection, direction, tier);
    const entry = { tier: hit && sameTier(hit.tier, built) ? hit.tier : built, pass: this.pass };
    this.tiers.set(key, entry);
    return entry.tier;
  }

  /** What a tier's IR is made of: its policies (and the pod's named ports when rules name one). */
  private key(s: Selection, direction: Direction, tier: Tier): string | null {
    const memo = `${tier} ${direction}`;
    let key = s.keys.get(memo);
    if (key !== undefined) return key;
    const views = s.views.filter((v) => v.tier === tier && v[direction].length > 0);
    const named = direction === 'ingress' && views.some((v) => v.ingress.some(hasNamedPort));
    key = views.length
      ? `${memo} ${views.map((v) => v.id).join(',')}${named ? ` ${JSON.stringify(s.info.namedPorts)}` : ''}`
      : null;
    s.keys.set(memo, key);
    return key;
  }

  private build(
    translator: Translator,
    selection: Selection,
    direction: Direction,
    tier: Tier,
  ): TierIR {
    const policies: string[] = [];
    const rules: RuleIR[] = [];
    for (const view of selection.views) {
      if (view.tier !== tier || view[direction].length === 0) continue;
      policies.push(view.name);
      for (const rule of view[direction]) {
        let plan = this.plans.get(rule);
        if (!plan) {
          const owner = { key: view.name, namespace: '' };
          plan = translator.plan(owner, direction, rule.comment, rule, rule.action);
          this.plans.set(rule, plan);
        }
        rules.push(...translator.emit(plan, selection.info));
      }
    }
    return { policies, rules };
  }
}
