// The pods of other nodes as NetworkPolicy peers, whichever source fills them (PeerSlices watched
// directly, or a peer relay's records): namespace → name → trimmed pod, with pod events for the
// reconciler's handlers. A pod that means the same to policy keeps its object (translation
// memoizes by object). This node's pods never come from here: the node's own pod watch has them.
import type { Logger, Pod } from '@flock/api';
import type { CacheHandler } from '@flock/kube';
import { samePolicyPod } from './caches.js';

export class RemotePeers {
  /** Namespace → pod name → pod (keyed by the pod's own name string: no key a pod). */
  private readonly peers = new Map<string, Map<string, Pod>>();
  private readonly handlers = new Set<CacheHandler<Pod>>();

  constructor(
    private readonly nodeName: string,
    private readonly logger: Logger,
  ) {}

  get size(): number {
    let n = 0;
    for (const names of this.peers.values()) n += names.size;
    return n;
  }

  /**
   * A pod is new or may have changed: the object now held for it (the one it had when it means
   * the same to policy; undefined for this node's own pods, which are not kept here).
   */
  put(pod: Pod): Pod | undefined {
    if (pod.spec?.nodeName === this.nodeName) return undefined;
    const ns = pod.metadata.namespace ?? '';
    let names = this.peers.get(ns);
    if (!names) this.peers.set(ns, (names = new Map<string, Pod>()));
    const name = pod.metadata.name;
    const had = names.get(name);
    if (had && samePolicyPod(had, pod)) return had;
    names.set(name, pod);
    this.emit((h) => (had ? h.onUpdate?.(had, pod) : h.onAdd?.(pod)));
    return pod;
  }

  delete(namespace: string, name: string): void {
    const names = this.peers.get(namespace);
    const had = names?.get(name);
    if (!names || !had) return;
    names.delete(name);
    if (names.size === 0) this.peers.delete(namespace);
    this.emit((h) => h.onDelete?.(had));
  }

  /** Become exactly `pods` (a source's complete state): events for what differs, nothing else. */
  replace(pods: Iterable<Pod>): void {
    const keep = new Set<string>();
    for (const p of pods)
      if (this.put(p)) keep.add(`${p.metadata.namespace ?? ''}/${p.metadata.name}`);
    this.retain((ns, name) => keep.has(`${ns}/${name}`));
  }

  /** Delete every pod `keep` says no to. */
  retain(keep: (namespace: string, name: string) => boolean): void {
    for (const [ns, names] of [...this.peers])
      for (const name of [...names.keys()]) if (!keep(ns, name)) this.delete(ns, name);
  }

  get(namespace: string, name: string): Pod | undefined {
    return this.peers.get(namespace)?.get(name);
  }

  /** The pods, added to `out` (150,000 of them: no spread into push). */
  list(out: Pod[] = []): Pod[] {
    for (const names of this.peers.values()) for (const p of names.values()) out.push(p);
    return out;
  }

  addHandler(handler: CacheHandler<Pod>): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  private emit(call: (h: CacheHandler<Pod>) => void): void {
    for (const h of [...this.handlers]) {
      try {
        call(h);
      } catch (error) {
        this.logger.error('peer handler failed', { error: String(error) });
      }
    }
  }
}
