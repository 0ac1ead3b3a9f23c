// The claim GC: an AddressClaim is released by the agent that holds it (at CNI DEL), but a
// node that dies takes its agent along, and its claims would hold their addresses forever. The
// leader releases claims whose owners are gone, every `periodMs` and once when it starts:
//  - Pinned: the holder pod is gone (404), was replaced (another UID under its name) or has
//    finished (Succeeded, Failed): the claim is deleted.
//  - Anycast: holders whose Node is gone are removed; with none left the claim is deleted.
//  - Pinned or Anycast without a holder for `graceMs` (an agent between creating a claim and
//    filling it in has had time): deleted.
//  - Service: a listed Service that is gone, or that has not shown the address (in its status
//    or spec.externalIPs) for `graceMs` (the controller writes the claim first, the status
//    next), leaves the list; the last one out starts the quarantine. A quarantine past its end
//    is deleted.
// Every write carries the resourceVersion that was read (a delete also the uid): an agent that
// changed the claim meanwhile (a hand-over, a new holder) wins, and the next pass looks again.
import { AddressClaim, Service, type ClaimHolder } from '@flock/api';
import { canonicalAddress } from '@flock/ipam';
import {
  apiErrorCode,
  errorMessage,
  isNotFound,
  Loop,
  NODES,
  objectPath,
  PODS,
  SERVICES,
  type Cache,
  type KubeObject,
  type KubeTransport,
  type Logger,
  type LoopMetrics,
} from '@flock/kube';
import { z } from 'zod';
import { deleteClaim, replaceClaim } from './claim-requests.js';
import type { Limiter } from './limiter.js';
import type { OperatorMetrics } from './metrics.js';
import type { Node } from './nodes.js';
import {
  DEFAULT_SERVICE_QUARANTINE_MS,
  isReleased,
  left,
  quarantineEnd,
  servicesOf,
} from './service-claims.js';

export const DEFAULT_CLAIM_GC_PERIOD_MS = 30_000;
export const DEFAULT_CLAIM_GRACE_MS = 60_000;

/** Why a claim was released (the `reason` label of claim_gc_deletions_total). */
export type GcReason =
  'pod-gone' | 'pod-replaced' | 'pod-finished' | 'no-holder' | 'nodes-gone' | 'quarantine-over';

/** The part of a Pod the GC reads. */
const PodLiveness = z.looseObject({
  metadata: z.looseObject({ uid: z.string() }),
  status: z.looseObject({ phase: z.string().optional() }).optional(),
});

export interface ClaimGcOptions {
  transport: KubeTransport;
  /** Every AddressClaim, as the API server sent it (a holder update writes the object back). */
  claims: Cache<KubeObject>;
  /** The operator's Node cache: a holder's node missing there is then asked for (GET). */
  nodes: Cache<Node>;
  /** The operator's Service cache: a listed Service missing there is then asked for (GET). */
  services?: Cache<Service>;
  /** How long a released Service address is held back (default 5 min). */
  serviceQuarantineMs?: number;
  /** Bounds the GETs and writes of one pass. */
  limiter: Limiter;
  logger: Logger;
  metrics: OperatorMetrics;
  loopMetrics?: LoopMetrics;
  periodMs?: number;
  graceMs?: number;
  /** The time (default Date.now); tests move it. */
  now?: () => number;
}

interface Read {
  raw: KubeObject;
  claim: AddressClaim;
}

export class ClaimGc {
  private readonly loop: Loop;
  /** Claims (by uid) seen without a holder, and since when. */
  private readonly holderless = new Map<string, number>();
  /** Listed Services (claim uid/name) seen without the address in their status, and since when. */
  private readonly unlisted = new Map<string, number>();
  private readonly now: () => number;

  constructor(private readonly o: ClaimGcOptions) {
    this.now = o.now ?? Date.now;
    this.loop = new Loop({
      name: 'claim-gc',
      sync: () => this.sweep(),
      periodMs: o.periodMs ?? DEFAULT_CLAIM_GC_PERIOD_MS,
      ...(o.loopMetrics ? { metrics: o.loopMetrics } : {}),
      onError: (err, retryInMs) =>
        o.logger.warn('claim GC pass failed', { err: errorMessage(err), retryInMs }),
    });
  }

  /** Run now and then every period. */
  start(): void {
    this.loop.start();
    this.loop.trigger(0);
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }

  /** One pass over every claim; rejects (after finishing the others) if any claim failed. */
  async sweep(): Promise<void> {
    const { claims, logger } = this.o;
    if (!claims.hasSynced) {
      this.loop.trigger(1_000); // the watch is still listing: look again soon
      return;
    }
    const now = this.now();
    const reads = claims.list().flatMap((raw): Read[] => {
      const r = AddressClaim.safeParse(raw);
      if (r.success) return [{ raw, claim: r.data }];
      logger.warn('invalid AddressClaim skipped', {
        name: raw.metadata.name,
        err: r.error.message,
      });
      return [];
    });
    this.o.metrics.claimCounts(reads.map((r) => r.claim.spec.kind));
    const live = new Set(reads.map((r) => r.claim.metadata.uid));
    for (const uid of this.holderless.keys()) if (!live.has(uid)) this.holderless.delete(uid);
    for (const k of this.unlisted.keys())
      if (!live.has(k.slice(0, k.lastIndexOf('/')))) this.unlisted.delete(k);
    const errors = await this.o.limiter.each(reads, (r) => this.check(r, now));
    if (errors.length)
      throw new AggregateError(errors, `${errors.length} claim(s): ${errorMessage(errors[0])}`);
  }

  private async check(r: Read, now: number): Promise<void> {
    const { claim } = r;
    if (claim.metadata.deletionTimestamp) return;
    const uid = claim.metadata.uid ?? claim.metadata.name;
    if (claim.spec.kind === 'Service') return this.checkService(r, uid, now);
    const [first] = claim.spec.holders;
    if (!first) {
      const since = this.holderless.get(uid) ?? now;
      this.holderless.set(uid, since);
      if (now - since >= (this.o.graceMs ?? DEFAULT_CLAIM_GRACE_MS))
        await this.release(r, 'no-holder');
      return;
    }
    this.holderless.delete(uid);
    if (claim.spec.kind === 'Pinned') {
      const reason = await this.pinnedGone(claim, first);
      if (reason) await this.release(r, reason);
      return;
    }
    const gone = await this.goneNodes(claim.spec.holders);
    if (gone.length === 0) return;
    const remaining = claim.spec.holders.filter((h) => !gone.includes(h.node));
    if (remaining.length === 0) await this.release(r, 'nodes-gone');
    else await this.dropHolders(r, remaining, gone);
  }

  /** A Service claim: its quarantine over, or Services that are gone or show another address. */
  private async checkService(r: Read, uid: string, now: number): Promise<void> {
    const { claim } = r;
    if (isReleased(claim)) {
      const q = this.o.serviceQuarantineMs ?? DEFAULT_SERVICE_QUARANTINE_MS;
      if (now >= quarantineEnd(claim, q)) await this.release(r, 'quarantine-over');
      return;
    }
    const stale: string[] = [];
    for (const name of servicesOf(claim)) {
      const k = `${uid}/${name}`;
      const shows = await this.showsAddress(claim, name);
      if (shows === true) {
        this.unlisted.delete(k);
        continue;
      }
      const since = this.unlisted.get(k) ?? now;
      this.unlisted.set(k, since);
      if (shows === 'gone' || now - since >= (this.o.graceMs ?? DEFAULT_CLAIM_GRACE_MS))
        stale.push(name);
    }
    if (!stale.length) return;
    const spec = stale.reduce((s, name) => left(s, name, now), claim.spec);
    const ok = await this.write('claim_update', () => replaceClaim(this.o.transport, r.raw, spec));
    if (!ok) return;
    this.o.metrics.claimServicesRemoved(stale.length);
    this.o.logger.info('services removed from claim', {
      claim: claim.metadata.name,
      namespace: claim.spec.namespace,
      services: stale,
      released: spec.releasedAt !== undefined,
    });
  }

  /** Does the listed Service show the claim's address (status, external IPs); 'gone': gone. */
  private async showsAddress(claim: AddressClaim, name: string): Promise<boolean | 'gone'> {
    const { namespace, address } = claim.spec;
    let svc = this.o.services?.getObject(name, namespace);
    if (!svc) {
      try {
        const path = objectPath(SERVICES, name, namespace);
        svc = Service.parse(await this.o.transport.request({ method: 'GET', path }));
      } catch (err) {
        if (isNotFound(err)) return 'gone';
        throw err;
      }
    }
    const shown = [
      ...(svc.status?.loadBalancer?.ingress ?? []).map((i) => i.ip),
      ...(svc.spec?.externalIPs ?? []),
    ];
    return shown.some((ip) => ip !== undefined && canonicalAddress(ip) === address);
  }

  /** Why the pinned holder no longer holds the address, or undefined while it does. */
  private async pinnedGone(claim: AddressClaim, h: ClaimHolder): Promise<GcReason | undefined> {
    if (!h.pod) return undefined; // the CRD refuses this; nothing to look up
    let pod: z.infer<typeof PodLiveness>;
    try {
      const path = objectPath(PODS, h.pod, claim.spec.namespace);
      pod = PodLiveness.parse(await this.o.transport.request({ method: 'GET', path }));
    } catch (err) {
      if (isNotFound(err)) return 'pod-gone';
      throw err;
    }
    if (h.uid !== undefined && pod.metadata.uid !== h.uid) return 'pod-replaced';
    const phase = pod.status?.phase;
    return phase === 'Succeeded' || phase === 'Failed' ? 'pod-finished' : undefined;
  }

  /** The holders' nodes that are gone: missing from the cache and, asked, from the server. */
  private async goneNodes(holders: readonly ClaimHolder[]): Promise<string[]> {
    const gone: string[] = [];
    for (const { node } of holders) {
      if (this.o.nodes.getObject(node)) continue;
      try {
        await this.o.transport.request({ method: 'GET', path: objectPath(NODES, node) });
      } catch (err) {
        if (isNotFound(err)) gone.push(node);
        else throw err;
      }
    }
    return gone;
  }

  private async release(r: Read, reason: GcReason): Promise<void> {
    const { name } = r.claim.metadata;
    const kind = r.claim.spec.kind;
    const ok = await this.write('claim_delete', () => deleteClaim(this.o.transport, r.claim));
    if (!ok) return;
    this.o.metrics.claimReleased(kind, reason);
    this.o.logger.info('claim released', { claim: name, kind, reason, key: r.claim.spec.key });
  }

  private async dropHolders(r: Read, holders: ClaimHolder[], gone: string[]): Promise<void> {
    const ok = await this.write('claim_update', () =>
      replaceClaim(this.o.transport, r.raw, { ...r.claim.spec, holders }),
    );
    if (!ok) return;
    this.o.metrics.claimHoldersRemoved(gone.length);
    this.o.logger.info('claim holders removed', { claim: r.claim.metadata.name, nodes: gone });
  }

  /** One write: true when done; false when the claim changed or went meanwhile (it wins). */
  private async write(
    kind: 'claim_delete' | 'claim_update',
    request: () => Promise<unknown>,
  ): Promise<boolean> {
    try {
      await request();
      this.o.metrics.write(kind, true);
      return true;
    } catch (err) {
      const code = apiErrorCode(err);
      if (code === 409 || code === 404) {
        this.o.metrics.write(kind, 'conflict');
        return false;
      }
      this.o.metrics.write(kind, false);
      throw err;
    }
  }
}
