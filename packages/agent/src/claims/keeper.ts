// This node's side of every claim, kept in step by one Loop (on claim and pod changes, after
// each ADD and DEL, and every --sweep-period):
//   - a live local pod whose floating address has no claim gets one (adoption: the first start
//     after an upgrade claims what live pods already hold, and a claim deleted by mistake comes
//     back); a claim held by someone else is a conflict — reported (Event, flock-agent status),
//     never "fixed" by taking the address from a live holder;
//   - a node with a member pod joins its anycast group; a node whose members are gone leaves;
//   - a pinned claim whose holder's attachment is gone from this node and whose pod is gone or
//     being deleted is released;
//   - a holder being deleted is marked withdrawn once BIRD runs a model without its address,
//     so its replacement (same namespace and key) may take the claim over at once.
// Addresses that an ADD is claiming right now are left alone (hold()): the ADD decides. The
// withdrawal mark is the exception: a replacement's ADD on the holder's node waits for it.
import type { AddressClaim, Logger, Pod } from '@flock/api';
import { Loop, type Cache, type CacheView, type LoopMetrics } from '@flock/kube';
import { settled, type Component } from '../core/lifecycle.js';
import { entryLiveness } from '../node/liveness.js';
import type { NodeConfigTracker } from '../node/node-config.js';
import { whenSynced } from '../node/pods.js';
import type { AllocationEntry, AllocationStore } from '../store/index.js';
import type { ClaimBook } from './book.js';
import { claimLookup } from './cache.js';
import {
  attachmentKey,
  holdsPinned,
  inAnycastGroup,
  pinnedAddresses,
  type ClaimOf,
} from './ownership.js';

/** A floating address a local pod asks for but does not hold. */
export interface ClaimConflict {
  address: string;
  namespace: string;
  pod: string;
  why: string;
}

interface ClaimKeeperOptions {
  nodeName: string;
  store: Pick<AllocationStore, 'entries'>;
  /** This node's pods (the pod cache's by-node view). */
  pods: CacheView<Pod>;
  claims: Cache<AddressClaim>;
  book: Pick<
    ClaimBook,
    'claimPinned' | 'joinAnycast' | 'leaveAnycast' | 'releasePinned' | 'markWithdrawn'
  >;
  nodeConfig: Pick<NodeConfigTracker, 'current'>;
  periodMs: number;
  logger: Logger;
  /** Tell a pod's owner (an Event on the pod). */
  warn?: (pod: Pod, reason: string, note: string) => void;
  loops?: LoopMetrics;
}

export class ClaimKeeper implements Component {
  readonly name = 'address claims of this node';
  private readonly loop: Loop;
  private readonly claimOf: ClaimOf;
  /** Addresses an ADD is claiming now, with how many ADDs. */
  private readonly held = new Map<string, number>();
  /** Host routes of the model BIRD runs (undefined until it ran one). */
  private announced: ReadonlySet<string> | undefined;
  private found: ClaimConflict[] = [];
  /** Conflicts told by an Event already and still there (namespace/pod/address). */
  private readonly told = new Set<string>();
  private cleanups: (() => void)[] = [];
  private live = false;
  private stopped = false;
  private first: Promise<void>;
  private firstDone!: () => void;

  constructor(private readonly o: ClaimKeeperOptions) {
    this.claimOf = claimLookup(o.claims);
    this.first = new Promise((resolve) => (this.firstDone = resolve));
    this.loop = new Loop({
      name: 'address-claims',
      sync: () => this.pass(),
      periodMs: o.periodMs,
      debounceMs: 50,
      ...(o.loops ? { metrics: o.loops } : {}),
      onError: (error) => o.logger.error('address claim pass failed', { error: String(error) }),
    });
  }

  /** Resolves after the first pass (adoption done), or at stop. */
  firstPass(): Promise<void> {
    return this.first;
  }

  /** Floating addresses local pods ask for and do not hold. */
  conflicts(): readonly ClaimConflict[] {
    return this.found;
  }

  /** Keep the keeper off these addresses while an ADD claims them; call the result when done. */
  hold(addresses: readonly string[]): () => void {
    for (const a of addresses) this.held.set(a, (this.held.get(a) ?? 0) + 1);
    return () => {
      for (const a of addresses) {
        const n = (this.held.get(a) ?? 1) - 1;
        if (n > 0) this.held.set(a, n);
        else this.held.delete(a);
      }
      this.trigger();
    };
  }

  /** BIRD now runs a model with these host routes (routing's onApplied). */
  setAnnounced(hostRoutes: readonly string[]): void {
    this.announced = new Set(hostRoutes);
    this.trigger();
  }

  trigger(): void {
    if (this.live) this.loop.trigger();
  }

  async start(): Promise<void> {
    const changed = () => this.trigger();
    this.cleanups = [
      this.o.claims.addHandler(
        { onAdd: changed, onUpdate: changed, onDelete: changed },
        { replay: false },
      ),
      this.o.pods.addHandler(
        { onAdd: changed, onUpdate: changed, onDelete: changed },
        { replay: false },
      ),
    ];
    await whenSynced(
      { hasSynced: this.o.pods.hasSynced && this.o.claims.hasSynced, synced: this.synced() },
      () => this.begin(),
      { logger: this.o.logger, waiting: 'address claims' },
    );
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.live = false;
    for (const c of this.cleanups.splice(0)) c();
    await this.loop.stop();
    this.firstDone();
  }

  private synced(): Promise<void> {
    return Promise.all([this.o.pods.synced, this.o.claims.synced]).then(() => undefined);
  }

  private async begin(): Promise<void> {
    if (this.stopped || this.live) return;
    this.live = true;
    await settled(this.loop.run());
    this.firstDone();
    this.loop.start();
  }

  private async pass(): Promise<void> {
    const spec = this.o.nodeConfig.current()?.nodeConfig.spec;
    if (!this.live || !spec) return;
    const entries = this.o.store.entries();
    const conflicts: ClaimConflict[] = [];
    const step = async (address: string, pod: Pod | undefined, work: () => Promise<unknown>) => {
      try {
        await work();
      } catch (error) {
        if (!pod)
          return this.o.logger.warn('address claim step failed', { address, error: String(error) });
        const why = error instanceof Error ? error.message : String(error);
        conflicts.push({ address, namespace: pod.metadata.namespace, pod: pod.metadata.name, why });
        this.tell(pod, address, why);
      }
    };
    for (const e of entries) {
      if (e.state !== 'committed') continue;
      const pod = this.o.pods.getObject(e.pod, e.namespace);
      const liveness = entryLiveness(e, pod);
      const key = attachmentKey(e, pod);
      if (!liveness.live || !pod || key === undefined) continue;
      for (const ip of pinnedAddresses(e, spec.pinnedCIDRs ?? [])) {
        if (!liveness.terminating) {
          if (!this.held.has(ip) && !holdsPinned(this.claimOf, ip, e.podUID))
            await step(ip, pod, () =>
              this.o.book.claimPinned(
                ip,
                { namespace: e.namespace, key, pod: e.pod, uid: e.podUID },
                { waitMs: 0 },
              ),
            );
        } else if (this.withdrawable(ip, e.podUID)) {
          // Even while an ADD holds the address: a replacement's ADD on this node waits for
          // exactly this mark (a fact about the holder's announcement, not a claim decision).
          await step(ip, undefined, () => this.o.book.markWithdrawn(ip, e.podUID));
        }
      }
      if (liveness.terminating) continue;
      for (const ip of e.anycast) {
        if (this.held.has(ip)) continue;
        const c = this.claimOf(ip);
        const joined =
          inAnycastGroup(this.claimOf, ip, e.namespace, key) &&
          c?.spec.holders.some((h) => h.node === this.o.nodeName);
        if (!joined)
          await step(ip, pod, () => this.o.book.joinAnycast(ip, { namespace: e.namespace, key }));
      }
    }
    for (const c of this.o.claims.list()) {
      const ip = c.spec.address;
      if (this.held.has(ip)) continue;
      if (this.releasable(c, entries)) {
        const uid = c.spec.holders[0]?.uid ?? '';
        await step(ip, undefined, () => this.o.book.releasePinned(ip, uid));
      } else if (this.leavable(c, entries)) {
        await step(ip, undefined, () => this.o.book.leaveAnycast(ip));
      }
    }
    this.found = conflicts;
    const now = new Set(conflicts.map((c) => `${c.namespace}/${c.pod}/${c.address}`));
    for (const id of this.told) if (!now.has(id)) this.told.delete(id);
  }

  /** A terminating holder's address that BIRD no longer announces, not yet marked. */
  private withdrawable(address: string, uid: string): boolean {
    const holder = this.claimOf(address)?.spec.holders[0];
    return (
      holdsPinned(this.claimOf, address, uid) &&
      holder?.withdrawn !== true &&
      this.announced !== undefined &&
      !this.announced.has(address)
    );
  }

  /** A pinned claim held here whose attachment is gone and whose pod is gone or going. */
  private releasable(c: AddressClaim, entries: readonly AllocationEntry[]): boolean {
    const h = c.spec.holders[0];
    if (c.spec.kind !== 'Pinned' || !h || h.node !== this.o.nodeName) return false;
    const backed = entries.some(
      (e) => e.podUID === h.uid && (e.ip6 === c.spec.address || e.ip4 === c.spec.address),
    );
    if (backed) return false;
    const pod = this.o.pods.getObject(h.pod ?? '', c.spec.namespace);
    const liveness = entryLiveness({ podUID: h.uid ?? '' }, pod);
    return !liveness.live || liveness.terminating;
  }

  /** An anycast group this node is in without a member pod here. */
  private leavable(c: AddressClaim, entries: readonly AllocationEntry[]): boolean {
    if (c.spec.kind !== 'Anycast' || !c.spec.holders.some((h) => h.node === this.o.nodeName))
      return false;
    return !entries.some(
      (e) => e.namespace === c.spec.namespace && e.anycast.includes(c.spec.address),
    );
  }

  private tell(pod: Pod, address: string, why: string): void {
    const id = `${pod.metadata.namespace}/${pod.metadata.name}/${address}`;
    if (this.told.has(id)) return;
    this.told.add(id);
    this.o.logger.warn('a local pod does not hold its floating address', {
      pod: `${pod.metadata.namespace}/${pod.metadata.name}`,
      address,
      why,
    });
    this.o.warn?.(
      pod,
      'FlockClaimConflict',
      `${why}: this node neither announces ${address} for the pod nor lets it send from it`,
    );
  }
}
