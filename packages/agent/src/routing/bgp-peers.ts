// What the bgp-peers loop keeps: this node's BGP peers as BIRD gets them (BFD sources filled in
// from the Node's addresses, passwords read from their Secrets) and the router ID. Re-read on
// NodeConfig and Node address changes and periodically; the Node comes from the agent's watch
// of it (a GET only before that has synced); warnings (BfdNotConfigured, peer Secret problems)
// are told once, as Events on the NodeConfig.
import type { Logger, NodeConfigSpec } from '@flock/api';
import type { KubeTransport } from '@flock/kube';
import { BfdWarnings, needsBfdSource, withBfdSources } from './bfd-sources.js';
import { passwordFile } from './password-file.js';
import {
  PeerPasswords,
  apiSecretReader,
  noPeers,
  peerWarnings,
  type ResolvedPeers,
  type SecretReader,
} from './peer-secrets.js';
import {
  cachedNodeAddresses,
  chooseRouterId,
  logRouterId,
  readNodeAddresses,
  type NodeAddress,
  type NodeView,
  type RouterIdChoice,
} from './router-id.js';

interface BgpPeersDeps {
  nodeName: string;
  transport: KubeTransport;
  /** This node's Node from the agent's watch of it (none, or not synced yet: a GET per refresh). */
  node?: NodeView | undefined;
  logger: Logger;
  /** --router-id: wins over everything else. */
  routerIdOverride?: string | undefined;
  /** Namespace of a passwordSecretRef without one (the agent's own). */
  secretNamespace: string;
  /** Where the last BGP passwords read are kept across restarts (none: memory only). */
  passwordFile?: string | undefined;
  /** Default: GET from the API server. */
  readSecret?: SecretReader | undefined;
  warn?: ((reason: string, note: string) => void) | undefined;
}

export class BgpPeers {
  private resolved: ResolvedPeers = noPeers();
  private choice: RouterIdChoice | undefined;
  private nodeAddresses: NodeAddress[] = [];
  private readonly passwords: PeerPasswords;
  private readonly bfdWarnings: BfdWarnings;

  constructor(private readonly deps: BgpPeersDeps) {
    const { logger } = deps;
    this.passwords = new PeerPasswords(
      deps.readSecret ?? apiSecretReader(deps.transport),
      deps.secretNamespace,
      logger,
      deps.passwordFile ? passwordFile(deps.passwordFile, logger) : undefined,
    );
    this.bfdWarnings = new BfdWarnings((note) => {
      logger.warn(note);
      deps.warn?.('BfdNotConfigured', note);
    });
  }

  /** The peers as last resolved (none before the first refresh). */
  get peers(): ResolvedPeers {
    return this.resolved;
  }

  /** The Node's addresses as last read (InternalIPs: kube-proxy's health checks listen there). */
  get addresses(): readonly NodeAddress[] {
    return this.nodeAddresses;
  }

  /** The router ID chosen at the last refresh. */
  get routerId(): RouterIdChoice | undefined {
    return this.choice;
  }

  /** Re-read the Node's addresses (when needed), the peers' Secrets and the router ID. */
  async refresh(spec: NodeConfigSpec): Promise<void> {
    const { logger, nodeName, routerIdOverride } = this.deps;
    const before = this.resolved;
    const needed =
      (!routerIdOverride && !spec.bgp.routerID) ||
      spec.bgp.peers.some(needsBfdSource) ||
      (spec.serviceCIDRs?.length ?? 0) > 0;
    if (needed) {
      try {
        this.nodeAddresses =
          cachedNodeAddresses(this.deps.node, nodeName) ??
          (await readNodeAddresses(this.deps.transport, nodeName));
      } catch (error) {
        logger.warn('cannot read the Node for its address; router ID and BFD sources unchanged', {
          error: String(error),
        });
      }
    }
    // Before the passwords: a multihop BFD peer is only valid for BIRD with its source.
    const sourced = withBfdSources(spec.bgp.peers, this.nodeAddresses);
    this.bfdWarnings.report(sourced.warnings);
    this.resolved = await this.passwords.resolve(sourced.peers);
    for (const w of peerWarnings(before, this.resolved)) this.deps.warn?.(w.reason, w.note);
    const choice = chooseRouterId({
      override: routerIdOverride,
      specRouterId: spec.bgp.routerID,
      nodeAddresses: this.nodeAddresses,
      nodeName,
    });
    if (choice.routerId !== this.choice?.routerId) logRouterId(logger, nodeName, choice);
    this.choice = choice;
  }
}
