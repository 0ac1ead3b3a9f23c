// Where the pods of each node flock runs get their addresses: every NodeConfig's prefixes
// (cidr6, cidr4) and the pinned ranges its pods may hold addresses from. A cache of every
// NodeConfig, trimmed to those fields. NodeConfig specs are written by the operator alone (an
// agent may only patch its own status), so a node cannot widen what its pods may claim to be.
import { NodeConfig, type Logger } from '@flock/api';
import { parsePrefix, type Prefix } from '@flock/ipam';
import {
  Cache,
  NODECONFIGS,
  resourceListWatch,
  type KubeTransport,
  type MetricsOptions,
} from '@flock/kube';
import type { z } from 'zod';

/** What peer address checks read of a NodeConfig. */
export const PeerNodeConfig = NodeConfig.transform((nc) => ({
  metadata: { name: nc.metadata.name },
  spec: {
    cidr6: nc.spec.cidr6,
    ...(nc.spec.cidr4 ? { cidr4: nc.spec.cidr4 } : {}),
    ...(nc.spec.pinnedCIDRs?.length ? { pinnedCIDRs: nc.spec.pinnedCIDRs } : {}),
  },
}));
export type PeerNodeConfig = z.output<typeof PeerNodeConfig>;

/** The ranges a node's pods may have addresses in. */
export interface NodeRanges {
  /** The node's own prefixes: any address in them is one of its pods'. */
  own: readonly Prefix[];
  /** Pinned ranges: an address in them belongs to the pod that holds its claim. */
  pinned: readonly Prefix[];
}

/** Parsed prefixes of CIDR texts (the unparsable left out: the schemas refuse them). */
export function prefixes(cidrs: readonly string[]): Prefix[] {
  return cidrs.flatMap((c) => {
    const p = parsePrefix(c, { allowHostBits: true });
    return p.ok ? [p.value] : [];
  });
}

export interface PeerRangesOptions {
  transport: KubeTransport;
  logger: Logger;
  /** Pod ranges of nodes flock does not run (the agent's --peer-pod-ranges). */
  otherRanges?: readonly string[];
  metrics?: MetricsOptions;
  watchdogMs?: number;
}

export class PeerRanges {
  readonly cache: Cache<PeerNodeConfig>;
  /** Parsed per cached object: an unchanged NodeConfig keeps its NodeRanges object. */
  private readonly parsed = new WeakMap<PeerNodeConfig, NodeRanges>();
  /** all(), until a node's ranges change. */
  private everyRange: readonly string[] | undefined;
  /** Pod ranges of nodes flock does not run: any address in them is some pod's. */
  readonly otherRanges: readonly string[];

  constructor(options: PeerRangesOptions) {
    this.otherRanges = options.otherRanges ?? [];
    this.cache = new Cache<PeerNodeConfig>({
      source: resourceListWatch(options.transport, NODECONFIGS),
      schema: PeerNodeConfig,
      name: 'policy-nodeconfigs',
      logger: options.logger,
      ...(options.metrics ? { metrics: options.metrics } : {}),
      ...(options.watchdogMs ? { watchdogMs: options.watchdogMs } : {}),
    });
  }

  get synced(): Promise<void> {
    return this.cache.synced;
  }

  /** Watch the NodeConfigs; `onChange` when a node's ranges come, go or change. */
  start(onChange: () => void): () => void {
    const same = (a: PeerNodeConfig, b: PeerNodeConfig) => JSON.stringify(a) === JSON.stringify(b);
    const changed = () => {
      this.everyRange = undefined;
      onChange();
    };
    const off = this.cache.addHandler(
      { onAdd: changed, onDelete: changed, onUpdate: (a, b) => void (same(a, b) || changed()) },
      { replay: false },
    );
    this.cache.start();
    return off;
  }

  async stop(): Promise<void> {
    await this.cache.stop();
  }

  /**
   * Every node's prefixes and pinned ranges and the other ranges, as CIDR text (sorted, once
   * each): where pods have their addresses. The same array until a node's ranges change.
   */
  all(): readonly string[] {
    if (!this.everyRange) {
      const out = new Set<string>(this.otherRanges);
      for (const nc of this.cache.list()) {
        const { cidr6, cidr4, pinnedCIDRs } = nc.spec;
        for (const c of [cidr6, ...(cidr4 ? [cidr4] : []), ...(pinnedCIDRs ?? [])]) out.add(c);
      }
      this.everyRange = [...out].sort();
    }
    return this.everyRange;
  }

  /** The ranges of a node flock runs; undefined for any other node (no NodeConfig). */
  of(node: string): NodeRanges | undefined {
    const nc = this.cache.getObject(node);
    if (!nc) return undefined;
    let hit = this.parsed.get(nc);
    if (!hit) {
      const { cidr6, cidr4, pinnedCIDRs } = nc.spec;
      hit = {
        own: prefixes([cidr6, ...(cidr4 ? [cidr4] : [])]),
        pinned: prefixes(pinnedCIDRs ?? []),
      };
      this.parsed.set(nc, hit);
    }
    return hit;
  }
}
