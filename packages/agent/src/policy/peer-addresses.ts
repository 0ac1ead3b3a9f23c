// Which of a peer pod's status.podIPs policy may use. Those addresses are written by the
// kubelet of the pod's node (or anyone who may patch pod status): unchecked, one compromised
// node could give a pod of a namespace some policy allows the address of an outside host or of
// another node's pod, and every agent would let that address through. An address counts only
// inside the ranges of the pod's own node — its NodeConfig's prefixes, or a pinned range when
// the pod holds the address's claim — or, for a pod of a node flock does not run, inside the
// configured other pod ranges. The rest is left out (fail-closed) and reported once per pod.
import type { Logger, Pod } from '@flock/api';
import { parseAddress, prefixContainsAddress, type Prefix } from '@flock/ipam';
import { holdsPinned, type ClaimOf } from '../claims/ownership.js';
import { withPodIPs } from '../node/trimmed-pod.js';
import { prefixes, type NodeRanges } from './peer-ranges.js';

export interface PeerAddressesOptions {
  /** The ranges of a node flock runs; undefined for any other node. */
  nodeRanges: (node: string) => NodeRanges | undefined;
  /** Where pods of nodes flock does not run have their addresses (--peer-pod-ranges). */
  otherRanges?: readonly string[];
  /** Pinned addresses' claims; absent: an address in a pinned range counts as such. */
  claimOf?: ClaimOf;
  /** Addresses of a pod that were left out: called once per pod and address. */
  ignored: (pod: Pod, addresses: string[]) => void;
}

/** One pod's verdict, kept while the pod object and its node's ranges are the same. */
interface Verdict {
  ranges: NodeRanges;
  /** The pod itself, a copy with fewer addresses, or undefined (none usable). */
  pod: Pod | undefined;
  ignored: string[];
  /** It read a claim: claims change without the pod, so it is decided again each pass. */
  claims: boolean;
}

const within = (list: readonly Prefix[], ip: string) => {
  const a = parseAddress(ip);
  return a !== undefined && list.some((p) => prefixContainsAddress(p, a));
};

export class PeerAddresses {
  private readonly other: NodeRanges;
  /**
   * Each pod's verdict; for the common one (every address kept, no claim read) just the ranges
   * it was decided with: no object a pod for 150,000 pods.
   */
  private readonly verdicts = new WeakMap<Pod, Verdict | NodeRanges>();
  /** Pod → the addresses reported about it, in this pass and the one before. */
  private reported = new Map<string, ReadonlySet<string>>();
  private previous = new Map<string, ReadonlySet<string>>();

  constructor(private readonly options: PeerAddressesOptions) {
    this.other = { own: prefixes(options.otherRanges ?? []), pinned: [] };
  }

  /** The check of one pass: what is reported and not seen again in a pass is forgotten. */
  pass(): (pod: Pod) => Pod | undefined {
    this.previous = this.reported;
    this.reported = new Map();
    return (pod) => this.admit(pod);
  }

  /** The pod as a peer with only its usable addresses; undefined when it has none. */
  private admit(pod: Pod): Pod | undefined {
    const node = pod.spec?.nodeName;
    const ranges = (node !== undefined && this.options.nodeRanges(node)) || this.other;
    const memo = this.verdicts.get(pod);
    if (memo === ranges) return pod;
    let v = memo && 'claims' in memo ? memo : undefined;
    if (!v || v.ranges !== ranges || v.claims) {
      v = this.decide(pod, ranges);
      const plain = v.pod === pod && !v.claims && !v.ignored.length;
      this.verdicts.set(pod, plain ? ranges : v);
    }
    if (v.ignored.length) this.report(pod, v.ignored);
    return v.pod;
  }

  private decide(pod: Pod, ranges: NodeRanges): Verdict {
    const ips =
      pod.status?.podIPs?.map((p) => p.ip) ?? (pod.status?.podIP ? [pod.status.podIP] : []);
    const { claimOf } = this.options;
    const uid = pod.metadata.uid;
    let claims = false;
    const kept: string[] = [];
    const ignored: string[] = [];
    for (const ip of ips) {
      let ok = within(ranges.own, ip);
      if (!ok && within(ranges.pinned, ip)) {
        claims = claimOf !== undefined;
        ok = !claimOf || (uid !== undefined && holdsPinned(claimOf, ip, uid));
      }
      (ok ? kept : ignored).push(ip);
    }
    const out = ignored.length === 0 ? pod : kept.length === 0 ? undefined : withPodIPs(pod, kept);
    return { ranges, pod: out, ignored, claims };
  }

  private report(pod: Pod, ignored: string[]): void {
    const { namespace, name, uid } = pod.metadata;
    const key = uid ?? `${namespace}/${name}`;
    const before = this.reported.get(key) ?? this.previous.get(key);
    const fresh = before ? ignored.filter((ip) => !before.has(ip)) : ignored;
    this.reported.set(key, fresh.length || !before ? new Set(ignored) : before);
    if (fresh.length) this.options.ignored(pod, fresh);
  }
}

/** Report left-out addresses: a warning naming the pod, and the counter. */
export function logIgnored(
  logger: Logger,
  counter?: { inc(n: number): void },
): PeerAddressesOptions['ignored'] {
  return (pod, addresses) => {
    logger.warn("peer pod addresses outside its node's pod ranges: NetworkPolicy ignores them", {
      pod: `${pod.metadata.namespace}/${pod.metadata.name}`,
      node: pod.spec?.nodeName ?? '',
      addresses: addresses.join(','),
    });
    counter?.inc(addresses.length);
  };
}
