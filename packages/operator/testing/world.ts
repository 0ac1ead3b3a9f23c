// A miniature cluster for planPool: it runs every pool's plan and carries the plan out the
// way the API server and the reconciler would — CEL's "cidr6/cidr4 never change" enforced,
// deletions held by finalizers, the garbage collector deleting a Node's NodeConfig, status
// written before finalizers are released. Tests and the property test check invariants on it.
import { NodeConfig, type Pool } from '@flock/api';
import { DEFAULT_PREFIX_QUARANTINE_MS } from '@flock/ipam';
import type { PlannedEvent } from '../src/conditions.js';
import { finalizersOf } from '../src/desired.js';
import type { Node } from '../src/nodes.js';
import { isTerminating } from '../src/ownership.js';
import { planOrphans, planPool, type PoolPlan } from '../src/plan.js';
import { iso, makeNode, makePool, T0, type PoolSpecInput } from './fixtures.js';

/** A prefix event: `at` is the world's clock, `seq` orders events that share a time. */
export interface PrefixEvent {
  prefix: string;
  node: string;
  at: number;
  seq: number;
}

export class World {
  readonly pools = new Map<string, Pool>();
  readonly nodes = new Map<string, Node>();
  readonly configs = new Map<string, NodeConfig>();
  readonly events: { pool: string; event: PlannedEvent }[] = [];
  /** Every prefix ever released, and when. */
  readonly freed: PrefixEvent[] = [];
  /** Every prefix ever handed to a new NodeConfig. */
  readonly handedOut: PrefixEvent[] = [];
  now = T0;
  private rv = 1;
  private seq = 0;

  constructor(readonly quarantineMs = DEFAULT_PREFIX_QUARANTINE_MS) {}

  addPool(name: string, spec: PoolSpecInput, createdOffsetMs = 0): Pool {
    const p = makePool(name, spec, {
      created: this.now + createdOffsetMs,
      uid: `uid-${name}-${++this.seq}`,
    });
    this.pools.set(name, p);
    return p;
  }

  editPool(name: string, edit: (spec: PoolSpecInput) => void): void {
    const p = this.pools.get(name);
    if (!p) throw new Error(`no pool ${name}`);
    const spec = structuredClone(p.spec) as PoolSpecInput;
    edit(spec);
    const next = makePool(name, spec, {
      created: Date.parse(String(p.metadata.creationTimestamp)),
      generation: (p.metadata.generation ?? 1) + 1,
      uid: p.metadata.uid as string,
      ...(p.status ? { status: p.status } : {}),
    });
    this.pools.set(name, next);
  }

  deletePool(name: string): void {
    this.pools.delete(name);
  }

  setNode(name: string, labels: Record<string, string>): void {
    const old = this.nodes.get(name);
    this.nodes.set(
      name,
      old
        ? { metadata: { ...old.metadata, labels } }
        : makeNode(name, labels, { created: this.now, uid: `uid-${name}-${++this.seq}` }),
    );
  }

  /** The Node goes; the garbage collector deletes the NodeConfigs it owns. */
  deleteNode(name: string): void {
    const node = this.nodes.get(name);
    this.nodes.delete(name);
    const nc = this.configs.get(name);
    const owned = (nc?.metadata.ownerReferences ?? []).some((r) => r['uid'] === node?.metadata.uid);
    if (nc && owned) this.deleteConfig(name);
  }

  /** DELETE: held while it has finalizers, else gone. */
  deleteConfig(name: string): void {
    const nc = this.configs.get(name);
    if (!nc || isTerminating(nc)) return;
    if (finalizersOf(nc).length === 0) this.configs.delete(name);
    else this.put({ ...nc, metadata: { ...nc.metadata, deletionTimestamp: iso(this.now) } });
  }

  /** Reconcile one pool (or clean up after a deleted one) as the reconciler would. */
  reconcile(name: string): PoolPlan | undefined {
    const pool = this.pools.get(name);
    if (!pool) {
      const plan = planOrphans(name, [...this.configs.values()]);
      plan.release.forEach((r) => this.release(r.name, r.finalizers));
      plan.delete.forEach((d) => this.deleteConfig(d.name));
      return undefined;
    }
    const plan = planPool({
      pool,
      pools: [...this.pools.values()],
      nodes: [...this.nodes.values()],
      nodeConfigs: [...this.configs.values()],
      now: this.now,
      quarantineMs: this.quarantineMs,
    });
    this.pools.set(name, { ...pool, status: plan.status });
    for (const r of plan.release) this.release(r.name, r.finalizers);
    for (const d of plan.delete) this.deleteConfig(d.name);
    for (const a of plan.apply) this.apply(a.object, a.created);
    for (const event of plan.events) this.events.push({ pool: name, event });
    return plan;
  }

  /** Reconcile every pool (and pools NodeConfigs still name) until nothing changes. */
  settle(maxRounds = 10): void {
    for (let round = 0; round < maxRounds; round++) {
      const before = this.fingerprint();
      const names = new Set([
        ...this.pools.keys(),
        ...[...this.configs.values()].map((c) => c.spec.pool),
      ]);
      for (const name of [...names].sort()) this.reconcile(name);
      if (this.fingerprint() === before) return;
    }
    throw new Error(`no fixpoint after ${maxRounds} rounds`);
  }

  live(): NodeConfig[] {
    return [...this.configs.values()].filter((c) => !isTerminating(c));
  }

  private apply(
    /** Unvalidated: NodeConfig.parse below checks it, as the API server's schema would. */
    obj: { metadata: { name: string } },
    created: boolean,
  ): void {
    const name = obj.metadata.name;
    const cur = this.configs.get(name);
    const next = NodeConfig.parse(obj);
    if (cur) {
      if (isTerminating(cur))
        throw new Error(`apply to NodeConfig ${name} while it is being deleted`);
      // The CRD's transition rules.
      if (next.spec.cidr6 !== cur.spec.cidr6)
        throw new Error(`${name}: cidr6 is immutable (${cur.spec.cidr6} -> ${next.spec.cidr6})`);
      if (cur.spec.cidr4 && next.spec.cidr4 !== cur.spec.cidr4)
        throw new Error(`${name}: cidr4 cannot change`);
    }
    if (created !== (cur === undefined))
      throw new Error(`${name}: created=${created} but exists=${cur !== undefined}`);
    const fresh = [
      next.spec.cidr6,
      ...(next.spec.cidr4 && next.spec.cidr4 !== cur?.spec.cidr4 ? [next.spec.cidr4] : []),
    ];
    for (const prefix of cur ? fresh.slice(1) : fresh)
      this.handedOut.push({ prefix, node: name, at: this.now, seq: ++this.seq });
    this.put({
      ...next,
      metadata: { ...next.metadata, uid: cur?.metadata.uid ?? `uid-nc-${name}-${++this.seq}` },
    });
  }

  private release(name: string, finalizers: string[]): void {
    const nc = this.configs.get(name);
    if (!nc) return;
    if (finalizers.length) {
      this.put({ ...nc, metadata: { ...nc.metadata, finalizers } });
      return;
    }
    this.configs.delete(name);
    for (const prefix of [nc.spec.cidr6, nc.spec.cidr4]) {
      if (prefix) this.freed.push({ prefix, node: name, at: this.now, seq: ++this.seq });
    }
  }

  private put(nc: NodeConfig): void {
    this.configs.set(nc.metadata.name, {
      ...nc,
      metadata: { ...nc.metadata, resourceVersion: String(++this.rv) },
    });
  }

  private fingerprint(): string {
    return JSON.stringify([
      [...this.configs.values()],
      [...this.pools.values()].map((p) => p.status),
    ]);
  }
}
