// externalTrafficPolicy Local: a node may take a Service's traffic only once kube-proxy on it
// delivers to a local endpoint. The EndpointSlice says an endpoint is ready; kube-proxy
// programs it a little later (its sync period). Announcing in between drops what arrives. The
// signal cloud load balancers use answers that: kube-proxy's health check of the Service
// (`spec.healthCheckNodePort`, on the node's addresses) says 200 once it has local endpoints.
// The gate asks it in the background and tells the pass when an answer changes; while the
// answer is "not yet" it asks again every retryMs.
import { request } from 'node:http';
import { isIPv6 } from 'node:net';

/** Does kube-proxy on `address` have local endpoints for the Service of `port`? */
export type HealthCheck = (address: string, port: number) => Promise<boolean>;

/** GET http://[address]:port/ — kube-proxy answers 200 with local endpoints, 503 without. */
export const kubeProxyHealthCheck: HealthCheck = (address, port) =>
  new Promise((resolve) => {
    const req = request(
      {
        host: address,
        port,
        path: '/',
        method: 'GET',
        timeout: 1000,
        family: isIPv6(address) ? 6 : 4,
      },
      (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });

export class LocalTrafficGate {
  private readonly known = new Map<number, boolean>();
  private readonly asking = new Set<number>();

  constructor(
    private readonly check: HealthCheck,
    /** The node's addresses kube-proxy's health checks listen on (its InternalIPs). */
    private readonly addresses: () => readonly string[],
    /** An answer changed, or the gate wants to ask again: re-plan. */
    private readonly changed: (delayMs: number) => void,
    private readonly retryMs = 200,
  ) {}

  /** kube-proxy's last answer for this health check port (false until it said yes); asks again. */
  open(port: number): boolean {
    void this.askOne(port);
    return this.known.get(port) ?? false;
  }

  /** Ask about these ports now; resolves once every answer is in. */
  async ask(ports: readonly number[]): Promise<void> {
    await Promise.all(ports.map((port) => this.askOne(port)));
  }

  /** Forget the ports no Service uses any more. */
  keep(ports: ReadonlySet<number>): void {
    for (const port of this.known.keys()) if (!ports.has(port)) this.known.delete(port);
  }

  private async askOne(port: number): Promise<void> {
    if (this.asking.has(port)) return;
    this.asking.add(port);
    let open = false;
    try {
      for (const address of this.addresses()) {
        open = await this.check(address, port);
        if (open) break;
      }
    } finally {
      this.asking.delete(port);
    }
    const before = this.known.get(port) ?? false;
    this.known.set(port, open);
    if (open !== before) this.changed(0);
    else if (!open) this.changed(this.retryMs); // still waiting for kube-proxy: ask again soon
  }
}
