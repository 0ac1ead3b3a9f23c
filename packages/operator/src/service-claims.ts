// The AddressClaims of Service addresses as the controller sees and writes them. Creating the
// claim is the lock; every later change (a Service joining a shared address, leaving it, the
// last one out starting the quarantine) is a write at the resourceVersion that was read, so a
// decision made on a stale read fails with 409 and is made again.
import {
  ADDRESSCLAIM_KIND,
  AddressClaim,
  API_VERSION,
  claimName,
  type AddressClaimSpec,
  type Service,
} from '@flock/api';
import {
  ADDRESSCLAIMS,
  apiErrorCode,
  objectPath,
  resourcePath,
  type Cache,
  type KubeObject,
  type KubeTransport,
} from '@flock/kube';
import { deleteClaim, replaceClaim } from './claim-requests.js';
import type { OperatorMetrics } from './metrics.js';
import { RecentWrites } from './recent-writes.js';

/** How long a released Service address is held back from other owners (--service-address-quarantine). */
export const DEFAULT_SERVICE_QUARANTINE_MS = 5 * 60_000;

export interface ClaimRead {
  /** As the API server sent it (a write sends it back whole, at its resourceVersion). */
  raw: KubeObject;
  claim: AddressClaim;
}

/** The listed Services of a Service claim (empty for a released one, or another kind). */
export const servicesOf = (c: AddressClaim): string[] =>
  c.spec.kind === 'Service' ? (c.spec.services ?? []) : [];

/** A Service claim whose last Service let it go: the address's quarantine. */
export const isReleased = (c: AddressClaim): boolean =>
  c.spec.kind === 'Service' && servicesOf(c).length === 0;

/** When a released claim's quarantine ends (epoch ms); 0 when its time cannot be read. */
export function quarantineEnd(c: AddressClaim, quarantineMs: number): number {
  const at = Date.parse(c.spec.releasedAt ?? '');
  return Number.isNaN(at) ? 0 : at + quarantineMs;
}

/** The spec with `service` added (a released claim taken back loses its releasedAt). */
export function joined(spec: AddressClaimSpec, service: string): AddressClaimSpec {
  const { releasedAt: _released, ...rest } = spec;
  return { ...rest, services: [...(spec.services ?? []).filter((s) => s !== service), service] };
}

/** The spec without `service`; the last one out leaves the claim released at `now`. */
export function left(spec: AddressClaimSpec, service: string, now: number): AddressClaimSpec {
  const services = (spec.services ?? []).filter((s) => s !== service);
  // Milliseconds kept: a quarantine rounded down to the second would end early.
  const releasedAt = new Date(now).toISOString();
  return services.length ? { ...spec, services } : { ...spec, services, releasedAt };
}

const protocolPorts = (svc: Service | undefined) =>
  (svc?.spec?.ports ?? []).map((p) => `${p.protocol ?? 'TCP'}/${p.port}`);

/**
 * Why `svc` cannot share an address with `others` (a protocol and port one of them uses
 * already), or undefined when it can.
 */
export function portConflict(
  svc: Service,
  others: readonly { name: string; service: Service | undefined }[],
): string | undefined {
  const mine = new Set(protocolPorts(svc));
  for (const o of others) {
    const clash = protocolPorts(o.service).find((p) => mine.has(p));
    if (clash) return `${clash} is used by Service ${o.name} already`;
  }
  return undefined;
}

/**
 * Every claim, parsed once per version read, with the controller's own fresher writes laid
 * over the cache (read-your-writes: a claim just created is not free because the watch lags).
 */
export class ClaimView {
  readonly writes = new RecentWrites<KubeObject>();
  private readonly parsed = new WeakMap<object, AddressClaim | null>();
  private readonly off: () => void;

  constructor(readonly cache: Cache<KubeObject>) {
    const observe = (o: KubeObject) => this.writes.observe(o);
    this.off = cache.addHandler(
      { onAdd: observe, onUpdate: (_, o) => observe(o), onDelete: observe },
      { replay: false },
    );
  }

  /** The parsed claim of a raw object (undefined when it is not a valid claim). */
  parse(raw: KubeObject): AddressClaim | undefined {
    let c = this.parsed.get(raw);
    if (c === undefined) {
      const r = AddressClaim.safeParse(raw);
      c = r.success ? r.data : null;
      this.parsed.set(raw, c);
    }
    return c ?? undefined;
  }

  all(): ClaimRead[] {
    return this.writes.overlay(this.cache.list()).flatMap((raw) => {
      const claim = this.parse(raw);
      return claim ? [{ raw, claim }] : [];
    });
  }

  /** The claim of an address. */
  of(address: string): ClaimRead | undefined {
    const name = claimName(address);
    const raw = this.writes.get(name, this.cache.getObject(name));
    const claim = raw && this.parse(raw);
    return raw && claim ? { raw, claim } : undefined;
  }

  close(): void {
    this.off();
  }
}

/** A write that lost to another writer: 409 (changed, or exists) or 404 (gone). */
export type Lost = 409 | 404;

/** The controller's claim writes, each recorded in the view and counted. */
export class ClaimWriter {
  constructor(
    private readonly transport: KubeTransport,
    private readonly view: ClaimView,
    private readonly metrics: OperatorMetrics,
  ) {}

  /** Create the claim of `address` for `service` (the lock); 409: someone has it. */
  async create(
    address: string,
    namespace: string,
    key: string,
    service: string,
  ): Promise<ClaimRead | Lost> {
    const spec: AddressClaimSpec = {
      address,
      kind: 'Service',
      namespace,
      key,
      holders: [],
      services: [service],
    };
    const body = {
      apiVersion: API_VERSION,
      kind: ADDRESSCLAIM_KIND,
      metadata: { name: claimName(address) },
      spec,
    };
    const r = await this.write('claim_create', () =>
      this.transport.request({ method: 'POST', path: resourcePath(ADDRESSCLAIMS), body }),
    );
    return typeof r === 'number' ? r : this.recorded(r);
  }

  /** Write the claim with a new spec, at the resourceVersion it was read at. */
  async update(read: ClaimRead, spec: AddressClaimSpec): Promise<ClaimRead | Lost> {
    const r = await this.write('claim_update', () => replaceClaim(this.transport, read.raw, spec));
    return typeof r === 'number' ? r : this.recorded(r);
  }

  /** Delete the claim as it was read (an ended quarantine the GC has not removed yet). */
  async delete(read: ClaimRead): Promise<true | Lost> {
    const r = await this.write('claim_delete', () => deleteClaim(this.transport, read.claim));
    return typeof r === 'number' ? r : true;
  }

  /** A fresh read of the claim of `address` (after a 409), or undefined when there is none. */
  async read(address: string): Promise<ClaimRead | undefined> {
    let raw: KubeObject;
    try {
      raw = (await this.transport.request({
        method: 'GET',
        path: objectPath(ADDRESSCLAIMS, claimName(address)),
      })) as KubeObject;
    } catch (err) {
      if (apiErrorCode(err) === 404) return undefined;
      throw err;
    }
    return this.recorded(raw);
  }

  private recorded(raw: KubeObject): ClaimRead {
    const claim = this.view.parse(raw);
    if (!claim) throw new Error(`AddressClaim ${String(raw.metadata.name)} is not valid`);
    this.view.writes.record(raw);
    return { raw, claim };
  }

  private async write(
    kind: 'claim_create' | 'claim_update' | 'claim_delete',
    request: () => Promise<unknown>,
  ): Promise<KubeObject | Lost> {
    try {
      const raw = (await request()) as KubeObject;
      this.metrics.write(kind, true);
      return raw;
    } catch (err) {
      const code = apiErrorCode(err);
      if (code === 409 || code === 404) {
        this.metrics.write(kind, 'conflict');
        return code;
      }
      this.metrics.write(kind, false);
      throw err;
    }
  }
}
