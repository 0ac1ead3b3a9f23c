// The nodes ClusterNetworkPolicy `nodes` peers select from: each node's labels and the IPs
// among its status.addresses, with selector results cached until a node's labels or addresses
// change (a status report that changes neither keeps them).
import { matchesSelector, type Family, type LabelSelector } from '@flock/api';
import { addressInterval } from './addresses.js';
import type { Node } from './state.js';

/** One parsed address (of a pod or a node). */
export interface PodAddress {
  family: Family;
  n: bigint;
}

interface NodeInfo {
  name: string;
  labels: Record<string, string>;
  addresses: PodAddress[];
}

/** A node's labels and the IPs among its status.addresses (InternalIP, ExternalIP, ...). */
function nodeInfo(node: Node): NodeInfo {
  const seen = new Set<bigint>();
  const addresses: PodAddress[] = [];
  for (const a of node.status?.addresses ?? []) {
    const parsed = addressInterval(a.address);
    if (!parsed || seen.has(parsed.interval.lo)) continue; // a Hostname entry, or a repeat
    seen.add(parsed.interval.lo);
    addresses.push({ family: parsed.family, n: parsed.interval.lo });
  }
  return { name: node.metadata.name, labels: node.metadata.labels ?? {}, addresses };
}

export class NodeIndex {
  private nodes: NodeInfo[] = [];
  private json = '[]';
  private readonly cache = new Map<string, PodAddress[]>();
  /** Counts the changes of the nodes' labels or addresses (what `nodes` peers select). */
  version = 0;

  update(nodes: readonly Node[]): void {
    const infos = nodes
      .map((n) => nodeInfo(n))
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    const text = JSON.stringify(infos, (_, v: unknown) => (typeof v === 'bigint' ? `${v}` : v));
    if (text === this.json) return;
    this.nodes = infos;
    this.json = text;
    this.cache.clear();
    this.version++;
  }

  /** Addresses of the nodes a `nodes` peer selects. */
  addresses(selector: LabelSelector): PodAddress[] {
    const key = JSON.stringify(selector);
    let hit = this.cache.get(key);
    if (!hit) {
      hit = this.nodes
        .filter((n) => matchesSelector(selector, n.labels))
        .flatMap((n) => n.addresses);
      this.cache.set(key, hit);
    }
    return hit;
  }
}
