// A node in miniature for the kernel tier, wired the way the agent wires pods (routed, no
// bridge): a node namespace, one namespace per pod joined by a veth `flock<8 hex>` ↔ `eth0`,
// and a "remote" namespace behind an uplink veth holding the addresses of pods on other nodes
// and of an external host. Pod side: its /32 and /128 on eth0, default routes via the on-link
// gateways 169.254.1.1 (a permanent neighbour entry for the host veth's MAC, so no ARP or proxy
// ARP is involved) and fe80::1 (on the host veth, found by neighbour discovery). Node side: a
// /32 and a /128 route per pod via its veth, forwarding on, rp_filter off (so anti-spoofing is
// flock's job, as on a real node where rp_filter may be loose). Nothing touches the host.
import type { HostPort } from '@flock/api';
import { run } from '@flock/exec';
import { Netns, vethBetween } from '@flock/testkit';
import { NftApplier, nftRunner } from '../src/apply.js';
import { renderState } from '../src/index.js';
import { renderTable, tableScript, type RenderOptions } from '../src/render.js';
import { parseState, type StateInput } from '../src/state.js';
import { translate } from '../src/translate.js';
import { local as localEntry, namespace, pod as podObject, type PortDecl } from './builders.js';
import { PeerClient, type ProbeAnswer } from './peer-client.js';

export const SERVED_PORTS = [80, 81];
export const UPLINK = {
  node4: '192.0.2.1',
  node6: '2001:db8:ffff::1',
  remote4: '192.0.2.2',
  remote6: '2001:db8:ffff::2',
};

export interface Endpoint {
  /** `ns/name` for pods, `ext` for the external host, `node` for the node itself. */
  ref: string;
  kind: 'pod' | 'external' | 'node';
  /** A pod wired on this node (policy is enforced on it). */
  local: boolean;
  ns?: string;
  /** Pod name within its namespace (a, b, c, r). */
  pod?: string;
  labels?: Record<string, string>;
  v4?: string;
  v6?: string;
  ports?: PortDecl[];
}

export interface Probe {
  proto: 'tcp' | 'udp';
  port: number;
  family: 4 | 6;
}

export interface StateOptions {
  /** Pods left out of the state (wired, but not known to policy yet). */
  exclude?: string[];
  /** Anycast source addresses per local pod, as the agent passes them. */
  anycast?: Record<string, string[]>;
  /** ClusterNetworkPolicies (Admin and Baseline tiers). */
  clusterPolicies?: unknown[];
  /** Node objects, for ClusterNetworkPolicy `nodes` peers. */
  nodes?: unknown[];
  /** What the agent adds when rendering (e.g. the node ports closed to pods). */
  render?: RenderOptions;
  /** hostPorts per local pod, as the agent passes them from its store. */
  hostPorts?: Record<string, HostPort[]>;
  /** Where the cluster's pods have their addresses (the state's podRanges). */
  podRanges?: string[];
}

let portCounter = 0;
/** A fresh client port per probe, so a new probe never matches an old conntrack entry. */
function nextLocalPort(): number {
  portCounter = (portCounter + 1) % 50_000;
  return 12_000 + portCounter;
}

async function sysctl(ns: Netns, ...settings: string[]): Promise<void> {
  for (const s of settings) await ns.exec('sysctl', ['-q', '-w', s]);
}

export class PolicyLab {
  readonly applier: NftApplier;
  private readonly peers = new Map<string, PeerClient>();
  private readonly podNs = new Map<string, Netns>();
  private readonly endpoints = new Map<string, Endpoint>();
  private ifaceCounter = 0;
  readonly interfaces = new Map<string, string>();

  private constructor(
    readonly node: Netns,
    readonly remote: Netns,
    private readonly namespaceLabels: Record<string, Record<string, string>>,
  ) {
    this.applier = new NftApplier(nftRunner({ netns: node.name }));
  }

  /** Build the node, wire `pods` (local ones get a namespace, the others live in the remote namespace). */
  static async create(
    namespaceLabels: Record<string, Record<string, string>>,
    endpoints: Endpoint[],
  ): Promise<PolicyLab> {
    const node = await Netns.create('npnode');
    let remote: Netns | undefined;
    try {
      remote = await Netns.create('npremote');
      const lab = new PolicyLab(node, remote, namespaceLabels);
      await lab.wireNode();
      const outside = endpoints.filter((e) => !e.local && e.kind !== 'node');
      for (const e of outside) await lab.wireRemoteAddress(e);
      lab.peers.set(
        'remote',
        await PeerClient.start(
          remote,
          outside.map((e) => ({
            name: e.ref,
            addresses: [e.v4, e.v6].filter((a) => a !== undefined),
          })),
          SERVED_PORTS,
        ),
      );
      // The node serves the probe ports on its uplink addresses too (node ports pods may reach).
      lab.peers.set(
        'node',
        await PeerClient.start(
          node,
          [{ name: 'node', addresses: [UPLINK.node4, UPLINK.node6] }],
          SERVED_PORTS,
        ),
      );
      lab.endpoints.set('node', {
        ref: 'node',
        kind: 'node',
        local: false,
        v4: UPLINK.node4,
        v6: UPLINK.node6,
      });
      for (const e of outside) lab.endpoints.set(e.ref, e);
      for (const e of endpoints.filter((x) => x.local)) await lab.addPod(e);
      return lab;
    } catch (e) {
      await node.destroy();
      await remote?.destroy();
      throw e;
    }
  }

  private async wireNode(): Promise<void> {
    await sysctl(
      this.node,
      'net.ipv4.ip_forward=1',
      'net.ipv6.conf.all.forwarding=1',
      'net.ipv4.conf.all.rp_filter=0',
      'net.ipv4.conf.default.rp_filter=0',
      'net.ipv6.conf.default.accept_dad=0',
    );
    await sysctl(this.remote, 'net.ipv6.conf.default.accept_dad=0');
    await vethBetween(this.node, 'uplink0', this.remote, 'eth0');
    await this.node.exec('ip', ['addr', 'add', `${UPLINK.node4}/24`, 'dev', 'uplink0']);
    await this.node.exec('ip', [
      '-6',
      'addr',
      'add',
      `${UPLINK.node6}/64`,
      'dev',
      'uplink0',
      'nodad',
    ]);
    await this.remote.exec('ip', ['addr', 'add', `${UPLINK.remote4}/24`, 'dev', 'eth0']);
    await this.remote.exec('ip', [
      '-6',
      'addr',
      'add',
      `${UPLINK.remote6}/64`,
      'dev',
      'eth0',
      'nodad',
    ]);
    await this.remote.exec('ip', ['route', 'add', 'default', 'via', UPLINK.node4]);
    await this.remote.exec('ip', ['-6', 'route', 'add', 'default', 'via', UPLINK.node6]);
  }

  private async wireRemoteAddress(e: Endpoint): Promise<void> {
    if (e.v4) {
      await this.remote.exec('ip', ['addr', 'add', `${e.v4}/32`, 'dev', 'eth0']);
      await this.node.exec('ip', ['route', 'add', `${e.v4}/32`, 'via', UPLINK.remote4]);
    }
    if (e.v6) {
      await this.remote.exec('ip', ['-6', 'addr', 'add', `${e.v6}/128`, 'dev', 'eth0', 'nodad']);
      await this.node.exec('ip', ['-6', 'route', 'add', `${e.v6}/128`, 'via', UPLINK.remote6]);
    }
  }

  /** Wire a local pod as the agent does (veth, addresses, routes) and start its servers. */
  async addPod(e: Endpoint): Promise<void> {
    const ns = await Netns.create('nppod');
    this.podNs.set(e.ref, ns);
    const iface = `flock${(++this.ifaceCounter).toString(16).padStart(8, '0')}`;
    this.interfaces.set(e.ref, iface);
    await sysctl(ns, 'net.ipv6.conf.default.accept_dad=0');
    await vethBetween(this.node, iface, ns, 'eth0');
    const link = JSON.parse(
      (await this.node.exec('ip', ['-j', 'link', 'show', 'dev', iface])).stdout,
    ) as { address: string }[];
    const mac = link[0]?.address ?? '';
    await this.node.exec('ip', ['-6', 'addr', 'add', 'fe80::1/64', 'dev', iface, 'nodad']);
    if (e.v4) {
      await ns.exec('ip', ['addr', 'add', `${e.v4}/32`, 'dev', 'eth0']);
      await ns.exec('ip', ['route', 'add', '169.254.1.1', 'dev', 'eth0', 'scope', 'link']);
      await ns.exec('ip', [
        'neigh',
        'replace',
        '169.254.1.1',
        'lladdr',
        mac,
        'dev',
        'eth0',
        'nud',
        'permanent',
      ]);
      await ns.exec('ip', ['route', 'add', 'default', 'via', '169.254.1.1', 'dev', 'eth0']);
      await this.node.exec('ip', ['route', 'add', `${e.v4}/32`, 'dev', iface]);
    }
    if (e.v6) {
      await ns.exec('ip', ['-6', 'addr', 'add', `${e.v6}/128`, 'dev', 'eth0', 'nodad']);
      await ns.exec('ip', ['-6', 'route', 'add', 'default', 'via', 'fe80::1', 'dev', 'eth0']);
      await this.node.exec('ip', ['-6', 'route', 'add', `${e.v6}/128`, 'dev', iface]);
    }
    this.peers.set(
      e.ref,
      await PeerClient.start(
        ns,
        [{ name: e.ref, addresses: [e.v4, e.v6].filter((a) => a !== undefined) }],
        SERVED_PORTS,
      ),
    );
    this.endpoints.set(e.ref, e);
  }

  /** The pod's own namespace (to add forged addresses in anti-spoofing tests). */
  podNamespace(ref: string): Netns {
    const ns = this.podNs.get(ref);
    if (!ns) throw new Error(`no local pod ${ref}`);
    return ns;
  }

  endpoint(ref: string): Endpoint {
    const e = this.endpoints.get(ref);
    if (!e) throw new Error(`no endpoint ${ref}`);
    return e;
  }

  allEndpoints(): Endpoint[] {
    return [...this.endpoints.values()];
  }

  /** The cluster state the agent would build: every pod (local and remote) and these policies. */
  state(policies: unknown[], options: StateOptions = {}): StateInput {
    const {
      exclude = [],
      anycast = {},
      clusterPolicies = [],
      nodes = [],
      hostPorts = {},
      podRanges = [],
    } = options;
    const pods = this.allEndpoints().filter((e) => e.kind === 'pod' && !exclude.includes(e.ref));
    return {
      namespaces: Object.entries(this.namespaceLabels).map(([name, labels]) =>
        namespace(name, labels),
      ),
      pods: pods.map((e) =>
        podObject(
          e.ref,
          e.labels ?? {},
          [e.v4, e.v6].filter((a) => a !== undefined),
          e.ports ?? [],
        ),
      ),
      policies: policies as StateInput['policies'],
      clusterPolicies: clusterPolicies as StateInput['clusterPolicies'],
      nodes: nodes as StateInput['nodes'],
      podRanges,
      local: pods
        .filter((e) => e.local)
        .map((e) => ({
          ...localEntry(e.ref, this.interfaces.get(e.ref) ?? '', anycast[e.ref]),
          ...(hostPorts[e.ref] ? { hostPorts: hostPorts[e.ref] } : {}),
        })),
    };
  }

  /** Render and apply the state for these policies in the node namespace. */
  async apply(policies: unknown[], options: StateOptions = {}): Promise<void> {
    const state = this.state(policies, options);
    await this.applier.apply(
      options.render
        ? tableScript(renderTable(translate(parseState(state)), options.render))
        : renderState(state),
    );
  }

  /** The same state as a table, applied as a diff to the last one when the structure allows. */
  async applyTable(policies: unknown[], options: StateOptions = {}): Promise<void> {
    await this.applier.applyTable(
      renderTable(translate(parseState(this.state(policies, options))), options.render),
    );
  }

  /** One probe with real packets; `reply` is the name of the pod that answered. */
  async probe(
    from: string,
    to: string,
    p: Probe,
    timeoutMs = 500,
    localAddress?: string,
    token?: string,
  ): Promise<ProbeAnswer> {
    const dst = this.endpoint(to);
    const host = p.family === 4 ? dst.v4 : dst.v6;
    if (!host) throw new Error(`cannot probe ${from} → ${to} over IPv${p.family}`);
    return this.probeAt(from, host, p, timeoutMs, localAddress, token);
  }

  /**
   * One probe to an address of the probe's family that leads to some endpoint's server other
   * than by its own address (e.g. a NAT64 prefix + its IPv4 address).
   */
  async probeAt(
    from: string,
    host: string,
    p: Probe,
    timeoutMs = 500,
    localAddress?: string,
    token?: string,
  ): Promise<ProbeAnswer> {
    const src = this.endpoint(from);
    const peer = this.peers.get(src.local ? from : src.kind === 'node' ? 'node' : 'remote');
    if (!peer) throw new Error(`cannot probe from ${from}`);
    const source =
      localAddress ?? (src.kind === 'node' ? undefined : p.family === 4 ? src.v4 : src.v6);
    return peer.probe({
      proto: p.proto,
      host,
      port: p.port,
      timeoutMs,
      localPort: nextLocalPort(),
      ...(source ? { localAddress: source } : {}),
      ...(token ? { token } : {}),
    });
  }

  /** The server answering for `ref`: its own, or the remote namespace's. */
  private serverOf(ref: string): PeerClient {
    const e = this.endpoint(ref);
    const peer = this.peers.get(e.local ? ref : 'remote');
    if (!peer) throw new Error(`no peer for ${ref}`);
    return peer;
  }

  /** Did `ref`'s server receive a UDP datagram with this token? */
  seen(ref: string, token: string): Promise<boolean> {
    return this.serverOf(ref).seen(token);
  }

  /** The source address `ref`'s server saw on the UDP datagram with this token. */
  sourceOf(ref: string, token: string): Promise<string | undefined> {
    return this.serverOf(ref).sourceOf(token);
  }

  /** Remove flock's tables (to show what happens without them). */
  async removeTable(): Promise<void> {
    for (const family of ['inet', 'arp'])
      await run(
        'ip',
        ['netns', 'exec', this.node.name, 'nft', 'delete', 'table', family, 'flock'],
        {
          okCodes: [0, 1],
        },
      );
    this.applier.forget();
  }

  async destroy(): Promise<void> {
    for (const peer of this.peers.values()) peer.close();
    for (const ns of this.podNs.values()) await ns.destroy();
    await this.remote.destroy();
    await this.node.destroy();
  }
}
