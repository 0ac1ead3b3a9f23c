// The Service address controller (leader only): gives LoadBalancer Services addresses from the
// Pools' Service ranges and writes them into status.loadBalancer.ingress, and claims the
// spec.externalIPs of any Service that lie in a range granted to it (service-external.ts).
// Level-triggered:
// the work-queue key is a Service's namespace/name, and a reconcile compares what the Service
// should have (scope, families, requested or granted ranges) with the claims that list it.
//  - Claim first, status second: an address in a Service's status always has its claim.
//  - What no longer fits (the Service is gone, changed type or class, left the grants, asks
//    for other addresses) is let go: the Service leaves the claim's list, and the last one out
//    starts the address's quarantine (releasedAt); the status ingress flock wrote is cleared,
//    except on a Service of another class (another controller's status).
//  - A served Service carries the load-balancer-cleanup finalizer until its addresses are let go
//    (service-finalizer.ts).
//  - Refusals, exhaustion and sharing conflicts are Warning Events on the Service, told once
//    per change of what they say, and retried every RETRY_MS and on claim changes.
import {
  ipFamily,
  OPERATOR_FIELD_MANAGER,
  requestedServiceAddresses,
  serviceSharingKey,
  type Family,
  type LoadBalancerIngress,
  type Pool,
  type Service,
} from '@flock/api';
import {
  mergePatch,
  SERVICES,
  type Cache,
  type EventInput,
  type EventSubject,
  type Logger,
  type ReconcileContext,
  type ReconcileResult,
  type KubeTransport,
} from '@flock/kube';
import { canonicalAddress } from '@flock/ipam';
import type { Limiter } from './limiter.js';
import type { OperatorMetrics } from './metrics.js';
import { inRanges } from './service-addresses.js';
import {
  left,
  servicesOf,
  type ClaimRead,
  type ClaimView,
  type ClaimWriter,
} from './service-claims.js';
import { setCleanupFinalizer } from './service-finalizer.js';
import {
  offers,
  servedClass,
  serviceScope,
  wantedFamilies,
  type Namespace,
} from './service-scope.js';
import { isRefusal, takeAddress, takeAny, type Refusal, type TakeContext } from './service-take.js';
import { externalTargets, NO_EXTERNAL } from './service-external.js';
import { serviceTargets } from './service-targets.js';

/** Refused and waiting Services are looked at again this often (claim changes wake them too). */
const RETRY_MS = 60_000;

interface EventSink {
  event(subject: EventSubject, input: EventInput): Promise<void>;
}

export interface ServiceControllerOptions {
  transport: KubeTransport;
  services: Cache<Service>;
  namespaces: Cache<Namespace>;
  /** Every Pool (the operator's view, with its own writes). */
  pools: () => Pool[];
  /** The pools whose Service ranges may be handed out (not refused or withdrawn for overlaps). */
  usablePools: () => ReadonlySet<string>;
  claims: ClaimView;
  writer: ClaimWriter;
  events: EventSink;
  eventWrites: Limiter;
  logger: Logger;
  metrics: OperatorMetrics;
  serveUnsetClass: boolean;
  quarantineMs: number;
  /** The pools whose waiting Services changed (their status counts them). */
  onWaiting?: (pools: readonly string[]) => void;
  now?: () => number;
}

const splitKey = (key: string) => {
  const slash = key.indexOf('/');
  return { namespace: key.slice(0, slash), name: key.slice(slash + 1) };
};

const subject = (svc: Service): EventSubject => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: svc.metadata,
});

export class ServiceController {
  /** Services (keys) that wait for an address no pool has free, and those pools. */
  readonly waiting = new Map<string, readonly string[]>();
  /** The last warning told per Service, so that a retry does not tell it again. */
  private readonly told = new Map<string, string>();
  private readonly now: () => number;

  constructor(private readonly o: ServiceControllerOptions) {
    this.now = o.now ?? Date.now;
  }

  /** The claims that list the Service (namespace/name). */
  claimsOf(namespace: string, name: string): ClaimRead[] {
    return this.o.claims
      .all()
      .filter(
        ({ claim }) =>
          claim.spec.kind === 'Service' &&
          claim.spec.namespace === namespace &&
          servicesOf(claim).includes(name),
      );
  }

  async reconcile(key: string, { signal }: ReconcileContext): Promise<ReconcileResult | void> {
    const { namespace, name } = splitKey(key);
    const svc = this.o.services.get(key);
    const live = svc && !svc.metadata.deletionTimestamp ? svc : undefined;
    // No Pool has Service ranges: flock gives no addresses, and tells nobody why (another load
    // balancer may serve these Services).
    const enabled = this.o.pools().some((p) => p.spec.services !== undefined);
    const external =
      live && enabled ? externalTargets(live, this.o.pools(), this.offered(live)) : NO_EXTERNAL;
    // The claims of external IPs it keeps are not the load balancer's to let go.
    const mine = this.claimsOf(namespace, name).filter(
      (c) => !external.take.includes(c.claim.spec.address),
    );
    const scope = serviceScope(svc, this.o.serveUnsetClass);
    const refusals: Refusal[] = [];
    if (scope === 'serve' && live && enabled) {
      await setCleanupFinalizer(this.o.transport, live, true, signal);
      refusals.push(...(await this.serve(key, live, mine, signal)));
    } else {
      // Another class's status is that controller's; otherwise what flock wrote leaves the
      // status (before its claims: a status address always has its claim).
      if (scope !== 'foreign' && live) await this.writeIngress(live, [], mine, signal);
      await this.release(mine, name, svc, signal);
      this.settle(key, undefined);
      // Let go of everything: the Service may go (or stay, without a load balancer).
      if (svc && servedClass(svc, this.o.serveUnsetClass))
        await setCleanupFinalizer(this.o.transport, svc, false, signal);
    }
    if (!live) {
      this.told.delete(key);
      return;
    }
    refusals.push(...external.refused);
    for (const ip of external.take) {
      const r = await takeAddress(this.context(live, signal), ip);
      if (isRefusal(r)) refusals.push(r);
      else if (r.fresh)
        this.tell(live, {
          reason: 'AddressAssigned',
          note: `claimed externalIP ${ip}`,
          normal: true,
        });
    }
    return this.conclude(key, live, refusals);
  }

  /** What the Pools' grants offer the Service. */
  private offered(svc: Service) {
    const usable = this.o.usablePools();
    return offers(this.o.pools(), this.o.namespaces.getObject(svc.metadata.namespace), svc, (p) =>
      usable.has(p),
    );
  }

  private context(svc: Service, signal: AbortSignal): TakeContext {
    const sharing = serviceSharingKey(svc);
    if (!sharing.ok) throw new Error(sharing.error); // callers looked at it first
    return {
      svc,
      key: sharing.value,
      view: this.o.claims,
      writer: this.o.writer,
      service: (n) => this.o.services.getObject(n, svc.metadata.namespace),
      now: this.now(),
      quarantineMs: this.o.quarantineMs,
      signal,
    };
  }

  /** The load balancer's addresses; what it could not have, and why. */
  private async serve(
    key: string,
    svc: Service,
    mine: ClaimRead[],
    signal: AbortSignal,
  ): Promise<Refusal[]> {
    const sharing = serviceSharingKey(svc);
    const requested = requestedServiceAddresses(svc);
    if (!sharing.ok)
      return this.refuse(key, svc, mine, { reason: 'AddressRefused', note: sharing.error }, signal);
    if (requested && !requested.ok)
      return this.refuse(
        key,
        svc,
        mine,
        { reason: 'AddressRefused', note: requested.error },
        signal,
      );
    const { families, required } = wantedFamilies(svc);
    const targets = serviceTargets(
      svc,
      requested?.value,
      { families, required },
      this.offered(svc),
    );
    if (!Array.isArray(targets)) return this.refuse(key, svc, mine, targets, signal);

    // Keep the claims that still fit a target; let the others go.
    const kept = new Map<Family, ClaimRead>();
    const gone: ClaimRead[] = [];
    for (const c of mine) {
      const ip = c.claim.spec.address;
      const t = targets.find((x) => x.family === ipFamily(ip));
      const fits =
        t !== undefined &&
        !kept.has(t.family) &&
        c.claim.spec.key === sharing.value &&
        (t.address !== undefined
          ? canonicalAddress(ip) === t.address
          : inRanges(
              ip,
              t.offered.flatMap((o) => o.cidrs),
            ));
      if (fits) kept.set(t.family, c);
      else gone.push(c);
    }

    const ctx = this.context(svc, signal);
    const refusals: Refusal[] = [];
    const got = new Map(kept);
    for (const t of targets) {
      if (got.has(t.family)) continue;
      const r =
        t.address !== undefined ? await takeAddress(ctx, t.address) : await takeAny(ctx, t.offered);
      if (isRefusal(r)) {
        refusals.push(r);
        continue;
      }
      got.set(t.family, r.read);
      if (r.notShared)
        this.tell(svc, { reason: 'AddressSharingConflict', note: `not shared: ${r.notShared}` });
      if (r.fresh)
        this.tell(svc, {
          reason: 'AddressAssigned',
          note: `assigned ${r.read.claim.spec.address}`,
          normal: true,
        });
    }
    // RequireDualStack: one family without an address is no address at all.
    const held = [...mine, ...got.values()];
    if (required && refusals.length) {
      gone.push(...got.values());
      got.clear();
    }
    const addresses = families.flatMap((f) => {
      const c = got.get(f);
      return c ? [c.claim.spec.address] : [];
    });
    // Status first: an address leaves the status before its claim lets the Service go.
    await this.writeIngress(svc, addresses, held, signal);
    await this.release(gone, svc.metadata.name, svc, signal);
    const exhausted = refusals.flatMap((r) => r.pools ?? []);
    this.settle(key, exhausted.length ? [...new Set(exhausted)] : undefined);
    return refusals;
  }

  /** Nothing for this Service: what it had goes, its status is cleared. */
  private async refuse(
    key: string,
    svc: Service,
    mine: ClaimRead[],
    r: Refusal,
    signal: AbortSignal,
  ): Promise<Refusal[]> {
    await this.writeIngress(svc, [], mine, signal);
    await this.release(mine, svc.metadata.name, svc, signal);
    this.settle(key, undefined);
    return [r];
  }

  /** Tell the refusals (once), and look again when one may have ended. */
  private conclude(
    key: string,
    svc: Service,
    refusals: readonly Refusal[],
  ): ReconcileResult | void {
    if (!refusals.length) {
      this.told.delete(key);
      return;
    }
    this.warn(key, svc, refusals);
    const until = Math.min(...refusals.map((r) => r.until ?? Infinity));
    const retry = Number.isFinite(until) ? Math.max(1_000, until - this.now() + 1_000) : RETRY_MS;
    return { requeueAfter: Math.min(retry, RETRY_MS) };
  }

  /** The Service leaves each claim; the last one out starts the quarantine. */
  private async release(
    claims: readonly ClaimRead[],
    name: string,
    svc: Service | undefined,
    signal: AbortSignal,
  ): Promise<void> {
    for (let c of claims) {
      for (let attempt = 0; ; attempt++) {
        if (signal.aborted) throw new Error('stopped: leadership lost or shutting down');
        const r = await this.o.writer.update(c, left(c.claim.spec, name, this.now()));
        if (typeof r === 'object') break;
        const fresh = await this.o.writer.read(c.claim.spec.address);
        if (!fresh || !servicesOf(fresh.claim).includes(name)) break;
        if (attempt >= 8) throw new Error(`${c.claim.spec.address}: could not let it go`);
        c = fresh;
      }
      this.o.logger.info('service address released', {
        service: `${c.claim.spec.namespace}/${name}`,
        address: c.claim.spec.address,
      });
      if (svc)
        this.tell(svc, {
          reason: 'AddressReleased',
          note: `released ${c.claim.spec.address}`,
          normal: true,
        });
    }
  }

  /**
   * Make status.loadBalancer.ingress list exactly `addresses` (as VIPs); without addresses,
   * take out only what flock wrote (the addresses of `mine`, or in a Pool's Service ranges):
   * a Service flock gives nothing keeps what another controller wrote there.
   */
  private async writeIngress(
    svc: Service,
    addresses: readonly string[],
    mine: readonly ClaimRead[],
    signal: AbortSignal,
  ): Promise<void> {
    const current = svc.status?.loadBalancer?.ingress ?? [];
    const ours = (ip: string | undefined) =>
      ip !== undefined &&
      (mine.some((c) => c.claim.spec.address === canonicalAddress(ip)) ||
        this.o.pools().some((p) => inRanges(ip, p.spec.services?.cidrs ?? [])));
    const wanted: LoadBalancerIngress[] = addresses.length
      ? addresses.map((ip) => ({ ip, ipMode: 'VIP' }))
      : current.filter((i) => !ours(i.ip));
    const same =
      wanted.length === current.length &&
      wanted.every((w, i) => current[i]?.ip === w.ip && current[i]?.ipMode === w.ipMode);
    if (same) return;
    if (signal.aborted) throw new Error('stopped: leadership lost or shutting down');
    try {
      await mergePatch(
        this.o.transport,
        SERVICES,
        svc.metadata.name,
        svc.metadata.namespace,
        { status: { loadBalancer: { ingress: wanted.length ? wanted : null } } },
        { fieldManager: OPERATOR_FIELD_MANAGER, subresource: 'status', signal },
      );
      this.o.metrics.write('service_status', true);
    } catch (err) {
      this.o.metrics.write('service_status', false);
      throw err;
    }
  }

  /** Record whether the Service waits for an exhausted pool; tell the pools that changed. */
  private settle(key: string, pools: readonly string[] | undefined): void {
    const before = this.waiting.get(key) ?? [];
    if (pools) this.waiting.set(key, pools);
    else this.waiting.delete(key);
    const changed = [...new Set([...before, ...(pools ?? [])])].filter(
      (p) => before.includes(p) !== (pools ?? []).includes(p),
    );
    if (changed.length) this.o.onWaiting?.(changed);
  }

  /** Warnings, told once for as long as they say the same. */
  private warn(key: string, svc: Service, refusals: readonly Refusal[]): void {
    const unique = refusals.filter((r, i) => refusals.findIndex((x) => x.note === r.note) === i);
    const note = unique.map((r) => r.note).join('; ');
    if (this.told.get(key) === note) return;
    this.told.set(key, note);
    for (const r of unique) this.tell(svc, r);
    this.o.logger.info('service address refused', { service: key, why: note });
  }

  private tell(svc: Service, e: { reason: string; note: string; normal?: boolean }): void {
    const input: EventInput = {
      type: e.normal ? 'Normal' : 'Warning',
      reason: e.reason,
      action: 'AssignAddress',
      note: e.note,
    };
    // Best effort, trailing the writes: the recorder logs a failed write and never rejects.
    void this.o.eventWrites.run(() => this.o.events.event(subject(svc), input));
  }
}
