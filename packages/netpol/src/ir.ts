// The intermediate form between translate() and render(): what each local pod may send and
// receive, with every peer and port list already resolved into named sets. It holds no
// Kubernetes concepts any more, and its element text is final, so render() only prints.

/** Addresses of peers, as nft interval-set elements (address, prefix or range) per family. */
export interface AddressSetIR {
  name: string;
  comment: string;
  v4: string[];
  v6: string[];
}

/** `protocol . port` elements such as `tcp . 80` or `udp . 1000-2000`. */
export interface PortSetIR {
  name: string;
  elements: string[];
  /** Some element is a range: the set needs `flags interval` (a pipapo set in the kernel). */
  interval: boolean;
}

/** `address . protocol . port` elements: egress to named ports, resolved per destination pod. */
export interface TupleSetIR {
  name: string;
  comment: string;
  v4: string[];
  v6: string[];
}

/**
 * What a matching rule does. Absent: a NetworkPolicy allow rule. ClusterNetworkPolicy rules
 * always carry one: `accept` (allowed, nothing later is consulted for this direction), `deny`
 * (dropped) or `pass` (the rest of the tier is skipped: Admin → NetworkPolicy, Baseline → the
 * default, allow).
 */
export type RuleAction = 'accept' | 'deny' | 'pass';

/**
 * One rule: peers (undefined = any address) and ports (undefined = any port); `except`: an
 * address set taken out of the peers (a Deny's unknown peers: the pod ranges minus known pods).
 */
export type RuleIR =
  | {
      kind: 'allow';
      comment: string;
      peers?: string;
      except?: string;
      ports?: string;
      action?: RuleAction;
    }
  | { kind: 'tuples'; comment: string; tuples: string; action?: RuleAction };

/** The ClusterNetworkPolicy rules of one tier for one pod and direction, in evaluation order. */
export interface TierIR {
  /** The ClusterNetworkPolicies (by name), in order of precedence. */
  policies: string[];
  rules: RuleIR[];
}

/**
 * A pod with rules in one direction: the Admin tier first, then NetworkPolicy (when some policy
 * isolates the pod: only what its rules allow passes), else the Baseline tier, else everything.
 */
export interface DirectionIR {
  /** The NetworkPolicies (`ns/name`) that isolate the pod in this direction (may be none). */
  policies: string[];
  /** Their allow rules. */
  rules: RuleIR[];
  /** Admin tier ClusterNetworkPolicy rules selecting the pod (absent: none). */
  admin?: TierIR;
  /** Baseline tier rules (absent: none, or the pod is isolated by a NetworkPolicy). */
  baseline?: TierIR;
}

/** DNAT map elements of a pod's hostPorts (host-ports.ts), per family: one node address, or any. */
export interface HostPortsIR {
  v4: string[];
  v6: string[];
  anyV4: string[];
  anyV6: string[];
}

export interface LocalPodIR {
  /** `namespace/name` */
  pod: string;
  /** Host-side interface of the pod's veth. */
  interface: string;
  /** Source addresses the pod may use (its pod IPs and anycast addresses): anti-spoofing. */
  sources: { v4: string[]; v6: string[] };
  /** undefined: no policy of any tier selects it for ingress (everything may reach it). */
  ingress?: DirectionIR;
  /** undefined: no policy of any tier selects it for egress. */
  egress?: DirectionIR;
  /** Its hostPorts (absent: none). */
  hostPorts?: HostPortsIR;
}

export interface NetpolIR {
  /** Local pods, sorted by interface. */
  pods: LocalPodIR[];
  addressSets: AddressSetIR[];
  portSets: PortSetIR[];
  tupleSets: TupleSetIR[];
}
