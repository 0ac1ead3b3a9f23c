// planPool: everything one reconcile of a Pool decides, as a pure function of the cached
// Pools, Nodes and NodeConfigs. The NodeConfigs are the record of assignments (never moved);
// new nodes get the lowest free prefix that is neither assigned nor quarantined; NodeConfigs
// being deleted have their prefixes quarantined before their finalizer is released.
import {
  ipv4NodePrefixLength,
  splitCidr,
  type AddressClaim,
  type Condition,
  type NodeConfig,
  type Pool,
  type PoolStatus,
} from '@flock/api';
import {
  parsePrefix,
  PrefixCarver,
  prefixesOverlap,
  type CarveProblem,
  type QuarantinedPrefix,
  type PrefixCounts,
  type PrefixExhausted,
} from '@flock/ipam';
import { poolConditions, type PlannedEvent, type PoolFacts } from './conditions.js';
import {
  desiredNodeConfig,
  finalizersOf,
  hasNodeOwner,
  needsApply,
  type NodeConfigApply,
} from './desired.js';
import { QUARANTINE_FINALIZER } from './names.js';
import type { Node } from './nodes.js';
import { isTerminating, Ownership } from './ownership.js';
import { createdMs, isRefused, overlapReports, withdrawnLists } from './overlaps.js';
import { serviceAddressFacts } from './service-pool-status.js';
import {
  addToQuarantine,
  nextExpiry,
  readQuarantine,
  untilMs,
  writeQuarantine,
  type Quarantined,
} from './quarantine.js';

export interface PlanInput {
  pool: Pool;
  /** Every Pool (`pool` included): for overlaps and for nodes that several pools select. */
  pools: readonly Pool[];
  nodes: readonly Node[];
  /** Every NodeConfig, of any pool. */
  nodeConfigs: readonly NodeConfig[];
  now: number;
  quarantineMs: number;
  /** Service address claims (their counts go into the status of the pool whose ranges hold them). */
  serviceClaims?: readonly AddressClaim[];
  /** Services waiting for an address this pool has none of free (namespace/name). */
  waitingServices?: readonly string[];
}

export interface ApplyStep {
  node: string;
  object: NodeConfigApply;
  /** A new NodeConfig (its prefixes were carved by this plan). */
  created: boolean;
}

export interface ObjectRef {
  name: string;
  uid?: string | undefined;
  resourceVersion?: string | undefined;
}

/** A NodeConfig being deleted whose prefixes are now in the quarantine: drop our finalizer. */
export interface ReleaseStep extends ObjectRef {
  /** The finalizers it keeps. */
  finalizers: string[];
}

export interface PoolPlan {
  apply: ApplyStep[];
  delete: ObjectRef[];
  /** Only after `status` (with the quarantine) has been written. */
  release: ReleaseStep[];
  status: PoolStatus;
  events: PlannedEvent[];
  /** When the earliest quarantine entry expires (then counts change, waiting nodes may fit). */
  requeueAfterMs?: number;
  /** The pool's own ranges cannot be carved: retrying will not help. */
  invalid?: string;
}

/** Look again at least hourly while a quarantine runs (timers beyond ~24.8 days overflow). */
const MAX_REQUEUE_MS = 3_600_000;

const refOf = (nc: NodeConfig): ObjectRef => ({
  name: nc.metadata.name,
  uid: nc.metadata.uid,
  resourceVersion: nc.metadata.resourceVersion,
});

/** The NodeConfig's prefix of one family, or undefined. */
const prefixOf = (nc: NodeConfig, family: 4 | 6) => (family === 6 ? nc.spec.cidr6 : nc.spec.cidr4);

function carver(
  pool: Pool,
  family: 4 | 6,
  mine: readonly NodeConfig[],
  others: readonly NodeConfig[],
  quarantine: readonly Quarantined[],
  elsewhere: readonly QuarantinedPrefix[],
  now: number,
) {
  const range = family === 6 ? pool.spec.ipv6 : pool.spec.ipv4;
  if (!range) return undefined;
  const assignments = new Map<string, string>();
  for (const nc of mine) {
    const p = prefixOf(nc, family);
    if (p !== undefined) assignments.set(nc.metadata.name, p);
  }
  // Prefixes held by NodeConfigs of other pools are never handed out here either (a pool that
  // was deleted and re-created, a range moved between pools): treat them as quarantined.
  const held = others.flatMap((nc) => {
    const p = prefixOf(nc, family);
    return p !== undefined && mayOverlap(range.cidr, p)
      ? [{ prefix: p, until: Number.MAX_SAFE_INTEGER }]
      : [];
  });
  const q = quarantine.filter((e) => splitCidr(e.prefix)?.family === family);
  // Quarantined by another pool but inside this range (a range moved between pools).
  const theirs = elsewhere.filter((e) => mayOverlap(range.cidr, e.prefix));
  return PrefixCarver.create({
    pool: pool.metadata.name,
    cidr: range.cidr,
    nodePrefixLength: family === 6 ? pool.spec.ipv6.nodePrefixLength : ipv4NodePrefixLength(range),
    assignments,
    quarantined: [...q, ...held, ...theirs],
    now,
  });
}

// Other pools' prefixes are almost never inside this pool's range; asking the carver about
// each would parse thousands of them on every plan. The answer per (range, prefix) is kept.
const overlapMemo = new Map<string, boolean>();
function mayOverlap(range: string, prefix: string): boolean {
  const key = `${range} ${prefix}`;
  let hit = overlapMemo.get(key);
  if (hit === undefined) {
    const r = parsePrefix(range);
    const p = parsePrefix(prefix);
    hit = !r.ok || !p.ok || prefixesOverlap(r.value, p.value);
    if (overlapMemo.size > 100_000) overlapMemo.clear();
    overlapMemo.set(key, hit);
  }
  return hit;
}

/** Plan one reconcile of `input.pool`. */
export function planPool(input: PlanInput): PoolPlan {
  const { pool, now } = input;
  const name = pool.metadata.name;
  const configs = new Map(input.nodeConfigs.map((nc) => [nc.metadata.name, nc]));
  const overlaps = overlapReports(input.pools);
  const overlap = overlaps.get(name) ?? { older: [], newer: [] };
  const ownership = new Ownership(input.pools, configs, overlaps);
  const refused = isRefused(overlap);
  const withdrawn = withdrawnLists(overlap);
  const mine = input.nodeConfigs.filter((nc) => nc.spec.pool === name);
  const others = input.nodeConfigs.filter((nc) => nc.spec.pool !== name);

  // NodeConfigs being deleted: their prefixes go into the quarantine, then they may go.
  const quarantine = readQuarantine(pool.status?.quarantine, now, input.quarantineMs);
  const release: ReleaseStep[] = [];
  for (const nc of mine.filter(isTerminating)) {
    const finalizers = finalizersOf(nc);
    if (!finalizers.includes(QUARANTINE_FINALIZER)) continue;
    for (const p of [nc.spec.cidr6, nc.spec.cidr4]) {
      if (p) addToQuarantine(quarantine, p, nc.metadata.name, now, input.quarantineMs);
    }
    release.push({
      ...refOf(nc),
      finalizers: finalizers.filter((f) => f !== QUARANTINE_FINALIZER),
    });
  }

  const elsewhere = input.pools
    .filter((p) => p.metadata.name !== name)
    .flatMap((p) =>
      (p.status?.quarantine ?? []).map((e) => ({
        prefix: e.prefix,
        until: untilMs(e.until, now, input.quarantineMs),
      })),
    )
    .filter((e) => e.until > now);
  const c6 = carver(pool, 6, mine, others, quarantine, elsewhere, now);
  const c4 = carver(pool, 4, mine, others, quarantine, elsewhere, now);
  const invalid = [c6, c4].flatMap((c) => (c && !c.ok ? [c.error] : [])).join('; ');
  const carve6 = c6?.ok ? c6.value : undefined;
  const carve4 = c4?.ok ? c4.value : undefined;

  // Assignments that do not fit the pool are reported and left alone.
  const problems = new Map<string, string>();
  const noteProblem = (p: CarveProblem) => {
    if (p.node !== undefined && !problems.has(p.node)) problems.set(p.node, p.message);
  };
  carve6?.problems.forEach(noteProblem);
  carve4?.problems.forEach(noteProblem);
  if (!pool.spec.ipv4) {
    for (const nc of mine) {
      if (nc.spec.cidr4 && !problems.has(nc.metadata.name)) {
        problems.set(
          nc.metadata.name,
          `node ${nc.metadata.name}: cidr4 ${nc.spec.cidr4} but the pool has no ipv4 range`,
        );
      }
    }
  }

  const apply: ApplyStep[] = [];
  const del: ObjectRef[] = [];
  const conflicts: PoolFacts['conflicts'] = [];
  const fresh: Node[] = [];
  const nodesByName = new Map<string, Node>();
  let selected = 0;
  let exhausted: PrefixExhausted | undefined;
  const waiting: string[] = [];
  const active = !refused && !invalid && carve6 !== undefined;

  for (const node of input.nodes) {
    nodesByName.set(node.metadata.name, node);
    const selecting = ownership.poolsSelecting(node);
    if (!selecting.some((p) => p.metadata.name === name)) continue;
    selected++;
    const owner = ownership.ownerOf(node, selecting);
    if (selecting.length > 1) {
      conflicts.push({
        node: node.metadata.name,
        pools: selecting.map((p) => p.metadata.name),
        owner,
      });
    }
    if (owner !== name || !active) continue;
    const nc = configs.get(node.metadata.name);
    if (nc === undefined) {
      fresh.push(node);
      continue;
    }
    // Being deleted, or still another pool's: wait until it is gone.
    if (isTerminating(nc) || nc.spec.pool !== name || problems.has(node.metadata.name)) continue;
    let cidr4 = nc.spec.cidr4;
    if (carve4 && cidr4 === undefined) {
      const r = carve4.assign(node.metadata.name);
      if (r.ok) cidr4 = r.prefix;
      else {
        exhausted = r.error;
        waiting.push(node.metadata.name);
      }
    }
    const object = desiredNodeConfig(pool, node, { cidr6: nc.spec.cidr6, cidr4 }, withdrawn);
    if (needsApply(nc, object)) apply.push({ node: node.metadata.name, object, created: false });
  }

  // New nodes, oldest first, get the lowest free prefixes (IPv4 first: it runs out first).
  fresh.sort((a, b) => createdMs(a) - createdMs(b) || (a.metadata.name < b.metadata.name ? -1 : 1));
  for (const node of fresh) {
    const n = node.metadata.name;
    let cidr4: string | undefined;
    if (carve4) {
      const r4 = carve4.assign(n);
      if (!r4.ok) {
        exhausted = r4.error;
        waiting.push(n);
        continue;
      }
      cidr4 = r4.prefix;
    }
    const r6 = (carve6 as PrefixCarver).assign(n);
    if (!r6.ok) {
      exhausted = r6.error;
      waiting.push(n);
      continue;
    }
    apply.push({
      node: n,
      object: desiredNodeConfig(pool, node, { cidr6: r6.prefix, cidr4 }, withdrawn),
      created: true,
    });
  }

  // NodeConfigs of this pool whose node left it. A vanished node's NodeConfig is left to the
  // garbage collector (a lagging Node cache must not free a live node's prefix).
  if (active) {
    for (const nc of mine) {
      if (isTerminating(nc)) continue;
      const node = nodesByName.get(nc.metadata.name);
      if (
        node
          ? !ownership.poolsSelecting(node).some((p) => p.metadata.name === name)
          : !hasNodeOwner(nc)
      ) {
        del.push(refOf(nc));
      }
    }
  }

  const configured =
    mine.filter((nc) => !isTerminating(nc)).length + apply.filter((a) => a.created).length;
  const counts6 = carve6?.counts();
  const counts4 = carve4?.counts();
  const facts: PoolFacts = {
    generation: pool.metadata.generation,
    invalid: invalid || undefined,
    overlap,
    exhausted: exhausted ? { message: exhausted.message, waiting } : undefined,
    conflicts,
    problems: [...problems.values()],
    selected,
    configured,
    ipv6: counts6,
    services: serviceAddressFacts(pool, input.serviceClaims ?? [], input.waitingServices ?? []),
  };
  const { conditions, events } = poolConditions(pool.status?.conditions, facts, new Date(now));
  const status = poolStatus(pool, selected, counts6, counts4, conditions, quarantine);
  if (facts.services) status.services = facts.services.counts;
  const expiry = nextExpiry(quarantine, now);
  return {
    apply,
    delete: del,
    release,
    status,
    events,
    ...(expiry !== undefined ? { requeueAfterMs: Math.min(expiry + 1_000, MAX_REQUEUE_MS) } : {}),
    ...(invalid ? { invalid } : {}),
  };
}

function poolStatus(
  pool: Pool,
  nodes: number,
  ipv6: PrefixCounts | undefined,
  ipv4: PrefixCounts | undefined,
  conditions: Condition[],
  quarantine: readonly Quarantined[],
): PoolStatus {
  const q = writeQuarantine(quarantine);
  return {
    ...(pool.metadata.generation !== undefined
      ? { observedGeneration: pool.metadata.generation }
      : {}),
    nodes,
    ...(ipv6 ? { ipv6 } : {}),
    ...(ipv4 ? { ipv4 } : {}),
    conditions,
    ...(q.length ? { quarantine: q } : {}),
  };
}

/**
 * The NodeConfigs of a pool that no longer exists: deleted (their nodes may join another
 * pool), and released without a quarantine (there is no pool status left to keep it in).
 */
export function planOrphans(
  pool: string,
  nodeConfigs: readonly NodeConfig[],
): Pick<PoolPlan, 'delete' | 'release'> {
  const mine = nodeConfigs.filter((nc) => nc.spec.pool === pool);
  return {
    delete: mine.filter((nc) => !isTerminating(nc)).map(refOf),
    release: mine
      .filter((nc) => isTerminating(nc) && finalizersOf(nc).includes(QUARANTINE_FINALIZER))
      .map((nc) => ({
        ...refOf(nc),
        finalizers: finalizersOf(nc).filter((f) => f !== QUARANTINE_FINALIZER),
      })),
  };
}
