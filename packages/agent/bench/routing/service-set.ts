// The Services of the Service-change bench as the agent's caches hold them: n LoadBalancer
// Services with one IPv6 and one IPv4 address each, claimed for them (kind Service) inside the
// NodeConfig's serviceCIDRs; even ones externalTrafficPolicy Cluster, odd ones Local, and of the
// Local ones every other one has a ready endpoint on this node (the rest only elsewhere). The
// changes are the ones a node sees: an endpoint here goes not ready or ready, a Service is added.
import { ADDRESSCLAIM_KIND, API_VERSION, claimName, type AddressClaim } from '@flock/api';
import type { ServiceView } from '../../src/routing/service-addresses.js';

export const SERVICE_CIDRS = ['2001:db8:400::/112', '198.18.0.0/16'];
const NAMESPACE = 'bench';

/** The two addresses of Service number i (i < 65,535). */
export function serviceAddresses(i: number): [string, string] {
  const n = i + 1;
  return [`2001:db8:400::${n.toString(16)}`, `198.18.${n >> 8}.${n & 255}`];
}

/** What one change did: its kind and the addresses that appear or go away. */
export interface Change {
  kind: 'endpoint not ready' | 'endpoint ready' | 'new Service';
  addresses: string[];
  announced: boolean;
}

export class ServiceSet {
  readonly services = new Map<string, ServiceView>();
  private readonly ready = new Map<string, number>();
  private readonly claims = new Map<string, AddressClaim>();
  private count = 0;

  constructor(readonly initial: number) {
    for (let i = 0; i < initial; i++) this.add(i % 2 === 1, i % 4 === 1);
  }

  readonly readyHere = (namespace: string, name: string): number =>
    this.ready.get(`${namespace}/${name}`) ?? 0;

  readonly claimOf = (address: string): AddressClaim | undefined => this.claims.get(address);

  /** The addresses this node announces now (Cluster, and Local with a ready endpoint here). */
  announced(): string[] {
    return [...this.services.values()].flatMap((s) =>
      !s.localTraffic || this.readyHere(NAMESPACE, s.metadata.name) > 0 ? s.addresses : [],
    );
  }

  /**
   * Change number k: in turn a Local Service's endpoint here goes not ready (withdrawn), another
   * Local Service gets a ready endpoint here (announced), a new Service (Local with a ready
   * endpoint here, or Cluster) is added (announced). Each one moves two addresses.
   */
  change(k: number): Change {
    const round = Math.floor(k / 3);
    switch (k % 3) {
      case 0: {
        const svc = this.nthLocal(round, 1);
        this.ready.set(`${NAMESPACE}/${svc.metadata.name}`, 0);
        return { kind: 'endpoint not ready', addresses: svc.addresses, announced: false };
      }
      case 1: {
        const svc = this.nthLocal(round, 3);
        this.ready.set(`${NAMESPACE}/${svc.metadata.name}`, 1);
        return { kind: 'endpoint ready', addresses: svc.addresses, announced: true };
      }
      default:
        return {
          kind: 'new Service',
          addresses: this.add(round % 2 === 0, true).addresses,
          announced: true,
        };
    }
  }

  /** The round-th Local Service of the initial set whose number is `residue` mod 4. */
  private nthLocal(round: number, residue: 1 | 3): ServiceView {
    const i = 4 * round + residue;
    const svc = i < this.initial ? this.services.get(`svc-${i}`) : undefined;
    if (!svc) throw new Error(`too many changes for ${this.initial} Services`);
    return svc;
  }

  private add(local: boolean, readyHere: boolean): ServiceView {
    const i = this.count++;
    const name = `svc-${i}`;
    const svc: ServiceView = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { namespace: NAMESPACE, name, uid: `uid-svc-${i}` },
      localTraffic: local,
      addresses: serviceAddresses(i),
    };
    this.services.set(name, svc);
    if (local) this.ready.set(`${NAMESPACE}/${name}`, readyHere ? 1 : 0);
    for (const address of svc.addresses)
      this.claims.set(address, {
        apiVersion: API_VERSION,
        kind: ADDRESSCLAIM_KIND,
        metadata: { name: claimName(address) },
        spec: {
          address,
          kind: 'Service',
          namespace: NAMESPACE,
          key: `Service/${name}`,
          holders: [],
          services: [name],
        },
      });
    return svc;
  }
}
