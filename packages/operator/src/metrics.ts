// The operator's own Prometheus metrics (the runtime's cache, work queue, reconcile and leader
// metrics are registered by @flock/kube under the same prefix).
import { collectDefaultMetrics, Counter, Gauge, type Registry } from 'prom-client';
import { ClaimKind, type PoolStatus } from '@flock/api';

export const METRICS_PREFIX = 'flock_operator_';

const CLAIM_KINDS = ClaimKind.options;

export class OperatorMetrics {
  readonly writes: Counter;
  private readonly nodes: Gauge;
  private readonly prefixes: Gauge;
  private readonly conditions: Gauge;
  private readonly claims: Gauge;
  private readonly claimDeletions: Counter;
  private readonly claimHolders: Counter;
  private readonly serviceAddresses: Gauge;
  private readonly claimServices: Counter;

  constructor(registry: Registry, options: { processMetrics?: boolean } = {}) {
    const p = METRICS_PREFIX;
    const registers = [registry];
    if (options.processMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: p });
    this.writes = new Counter({
      name: `${p}writes_total`,
      help: 'API writes by what was written and the outcome.',
      labelNames: ['kind', 'result'],
      registers,
    });
    this.nodes = new Gauge({
      name: `${p}pool_nodes`,
      help: "Nodes selected by a pool's nodeSelector.",
      labelNames: ['pool'],
      registers,
    });
    this.prefixes = new Gauge({
      name: `${p}pool_prefixes`,
      help: 'Node prefixes of a pool by family and state (total, allocated, quarantined, free).',
      labelNames: ['pool', 'family', 'state'],
      registers,
    });
    this.conditions = new Gauge({
      name: `${p}pool_condition`,
      help: '1 when the pool condition is True.',
      labelNames: ['pool', 'type'],
      registers,
    });
    this.claims = new Gauge({
      name: `${p}claims`,
      help: 'AddressClaims by kind (Pinned, Anycast, Service), as the last claim GC pass saw them.',
      labelNames: ['kind'],
      registers,
    });
    this.claimDeletions = new Counter({
      name: `${p}claim_gc_deletions_total`,
      help: 'AddressClaims the claim GC deleted, by kind and why (pod-gone, pod-replaced, pod-finished, nodes-gone, no-holder, quarantine-over).',
      labelNames: ['kind', 'reason'],
      registers,
    });
    this.claimHolders = new Counter({
      name: `${p}claim_gc_holders_removed_total`,
      help: 'Holders (nodes that are gone) the claim GC removed from Anycast claims.',
      registers,
    });
    this.claimServices = new Counter({
      name: `${p}claim_gc_services_removed_total`,
      help: 'Services the claim GC removed from Service claims (gone, or not showing the address).',
      registers,
    });
    this.serviceAddresses = new Gauge({
      name: `${p}service_addresses`,
      help: "Addresses of a pool's Service ranges by family and state (total, assigned, quarantined, free; capped at 2^53 - 1).",
      labelNames: ['pool', 'family', 'state'],
      registers,
    });
    for (const kind of CLAIM_KINDS) this.claims.set({ kind }, 0);
  }

  /** An API write; 'conflict': the object changed or went meanwhile (another writer won). */
  write(
    kind:
      | 'nodeconfig_apply'
      | 'nodeconfig_delete'
      | 'finalizer_release'
      | 'pool_status'
      | 'claim_create'
      | 'claim_delete'
      | 'claim_update'
      | 'service_status'
      | 'peerslice_create'
      | 'peerslice_update'
      | 'peerslice_delete'
      | 'nodepeer_create'
      | 'nodepeer_update'
      | 'nodepeer_delete',
    result: boolean | 'conflict',
  ) {
    this.writes.inc({ kind, result: result === true ? 'ok' : result || 'error' });
  }

  claimCounts(kinds: readonly ClaimKind[]): void {
    for (const kind of CLAIM_KINDS)
      this.claims.set({ kind }, kinds.filter((k) => k === kind).length);
  }

  claimReleased(kind: ClaimKind, reason: string): void {
    this.claimDeletions.inc({ kind, reason });
  }

  claimHoldersRemoved(count: number): void {
    this.claimHolders.inc(count);
  }

  claimServicesRemoved(count: number): void {
    this.claimServices.inc(count);
  }

  poolStatus(pool: string, status: PoolStatus): void {
    this.nodes.set({ pool }, status.nodes ?? 0);
    for (const family of ['ipv6', 'ipv4'] as const) {
      const counts = status[family];
      if (!counts) continue;
      for (const [state, value] of Object.entries(counts)) {
        this.prefixes.set({ pool, family, state }, value);
      }
    }
    for (const family of ['ipv6', 'ipv4'] as const) {
      for (const [state, value] of Object.entries(status.services?.[family] ?? {})) {
        this.serviceAddresses.set({ pool, family, state }, value);
      }
    }
    for (const c of status.conditions ?? []) {
      this.conditions.set({ pool, type: c.type }, c.status === 'True' ? 1 : 0);
    }
  }

  async poolGone(pool: string): Promise<void> {
    this.nodes.remove({ pool });
    for (const g of [this.prefixes, this.conditions, this.serviceAddresses]) {
      for (const { labels } of (await g.get()).values) {
        if (labels['pool'] === pool) g.remove(labels);
      }
    }
  }
}

export type WriteKind = Parameters<OperatorMetrics['write']>[0];

/** One API write, counted as ok or failed (rethrown) when there are metrics. */
export async function countedWrite<T>(
  metrics: OperatorMetrics | undefined,
  kind: WriteKind,
  request: () => Promise<T>,
): Promise<T> {
  try {
    const result = await request();
    metrics?.write(kind, true);
    return result;
  } catch (error) {
    metrics?.write(kind, false);
    throw error;
  }
}
