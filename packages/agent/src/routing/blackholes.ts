// The node's summary routes: `blackhole <cidr6>` and `<cidr4>` (protocol 241), so traffic to an
// address of the node's prefixes that no pod holds is dropped here instead of looping back to
// the router that sent it; the same for the Service ranges (an address kube-proxy does not
// deliver yet, or any more: kube-proxy's DNAT comes before routing, so a delivered one never
// meets the blackhole). Installed at start-up and again every --resync (someone may delete
// them); a NodeConfig with new prefixes is picked up by the next run. A node of a Private IPv4
// pool blackholes the pool's whole range too: the inter-node translator (nat64/siit.ts) routes
// its halves, which win while its device is there.
import type { Logger } from '@flock/api';
import { Loop, type LoopMetrics } from '@flock/kube';
import type { Component } from '../core/lifecycle.js';
import type { Datapath } from '../datapath/index.js';
import type { NodeConfigTracker } from '../node/node-config.js';

interface BlackholesOptions {
  datapath: Pick<Datapath, 'ensureBlackholes'>;
  nodeConfig: Pick<NodeConfigTracker, 'current'>;
  periodMs: number;
  logger: Logger;
  loops?: LoopMetrics;
}

export class Blackholes implements Component {
  readonly name = 'blackhole summary routes';
  private readonly loop: Loop;

  constructor(options: BlackholesOptions) {
    this.loop = new Loop({
      name: 'blackholes',
      ...(options.loops ? { metrics: options.loops } : {}),
      periodMs: options.periodMs,
      backoff: { baseMs: 1000, maxMs: options.periodMs, jitter: 0.2 },
      sync: async () => {
        const nc = options.nodeConfig.current()?.nodeConfig;
        if (nc)
          await options.datapath.ensureBlackholes([
            nc.spec.cidr6,
            ...(nc.spec.cidr4 ? [nc.spec.cidr4] : []),
            ...(nc.spec.serviceCIDRs ?? []),
            // Private IPv4 no translator carries: unNATed, it must not leave for a router that
            // does not know the range.
            ...(nc.spec.ipv4?.mode === 'Private' ? (nc.spec.ipv4.clusterCIDRs ?? []) : []),
          ]);
      },
      onError: (error) =>
        options.logger.error('could not install blackhole routes', { error: String(error) }),
    });
  }

  /** Install now (a failure is logged and retried by the loop), then keep them. */
  async start(): Promise<void> {
    await this.loop.run().catch(() => undefined); // logged by onError
    this.loop.start();
  }

  /** Converge now: the NodeConfig's ranges changed. */
  trigger(): void {
    this.loop.trigger();
  }

  stop(): Promise<void> {
    return this.loop.stop();
  }
}
