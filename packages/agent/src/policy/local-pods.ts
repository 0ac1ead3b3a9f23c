// This node's pods as a policy pass sees them: the allocation store's committed entries, the
// pending ones whose ADD has reached its policy step (admitted, so their rules are in force
// before the ADD returns), and entries being torn down (isolated until their veth is gone).
// Each carries its Pod as last seen, so a deleted pod keeps its labels until its DEL.
import type { Pod } from '@flock/api';
import { entryKey, type AllocationEntry } from '../store/index.js';
import type { PodLookup } from '../node/pods.js';
import { trimPod } from '../node/pods.js';
import type { LocalAttachment } from './state.js';

export interface LocalPodsOptions {
  /** The allocation store: committed entries are this node's pods. */
  store: { entries(): AllocationEntry[] };
  /** The shared pod cache. */
  cached: { getObject(name: string, namespace: string): Pod | undefined };
  /** Where a new pod is looked up when the pod cache has not seen it yet. */
  pods: PodLookup;
  /** What each attachment may use as its source addresses (absent: all of its addresses). */
  sourcesOf?: (entry: AllocationEntry, pod: Pod | undefined) => LocalAttachment['sources'];
}

export class LocalPods {
  /** Pending entries whose ADD is in beforeCommit or past it: in the table before they commit. */
  private readonly admitted = new Map<string, AllocationEntry>();
  /** Local pods by UID as last seen. */
  private readonly lastSeen = new Map<string, Pod>();

  constructor(private readonly options: LocalPodsOptions) {}

  /** An ADD reached its policy step: its pod is in every pass from now on. Returns its key. */
  async admit(entry: AllocationEntry): Promise<string> {
    const pod = await this.lookup(entry);
    if (pod) this.lastSeen.set(entry.podUID, pod);
    const key = entryKey(entry.containerID, entry.ifname);
    this.admitted.set(key, entry);
    return key;
  }

  /** The ADD failed: its pod leaves the passes again. */
  withdraw(key: string): void {
    this.admitted.delete(key);
  }

  /** Committed entries and admitted pending ones, each with its Pod as known. */
  attachments(): LocalAttachment[] {
    const entries = this.options.store.entries();
    const present = new Set<string>();
    const uids = new Set<string>();
    const out: LocalAttachment[] = [];
    for (const entry of entries) {
      const key = entryKey(entry.containerID, entry.ifname);
      present.add(key);
      if (entry.removing) {
        // Being torn down: isolated both ways, sending only from its own addresses, until the
        // veth is gone (a failed teardown is retried by the sweep; meanwhile it stays so).
        const addresses = [entry.ip6, ...(entry.ip4 ? [entry.ip4] : [])];
        out.push({ entry, pod: undefined, removing: true, sources: { addresses, anycast: [] } });
        continue;
      }
      if (entry.state === 'committed') this.admitted.delete(key);
      else if (!this.admitted.has(key)) continue; // an ADD that has not reached its policy step
      uids.add(entry.podUID);
      const pod = this.podOf(entry);
      const sources = this.options.sourcesOf?.(entry, pod);
      out.push({ entry, pod, ...(sources ? { sources } : {}) });
    }
    for (const key of this.admitted.keys()) if (!present.has(key)) this.admitted.delete(key);
    for (const uid of this.lastSeen.keys()) if (!uids.has(uid)) this.lastSeen.delete(uid);
    return out;
  }

  private async lookup(entry: AllocationEntry): Promise<Pod | undefined> {
    const cached = this.options.cached.getObject(entry.pod, entry.namespace);
    if (cached?.metadata.uid === entry.podUID) return cached;
    const fetched = await this.options.pods.get(entry.namespace, entry.pod, entry.podUID);
    return fetched ? trimPod(fetched) : undefined; // parsed by the lookup (@flock/api's Pod)
  }

  private podOf(entry: AllocationEntry): Pod | undefined {
    const cached = this.options.cached.getObject(entry.pod, entry.namespace);
    if (cached?.metadata.uid === entry.podUID) {
      this.lastSeen.set(entry.podUID, cached);
      return cached;
    }
    return this.lastSeen.get(entry.podUID) ?? cached;
  }
}
