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

/** One allow rule: peers (undefined = any address) and ports (undefined = any port). */
export type RuleIR =
  | { kind: 'allow'; comment: string; peers?: string; ports?: string }
  | { kind: 'tuples'; comment: string; tuples: string };

/** A pod isolated in one direction: traffic passes only if some rule allows it. */
export interface DirectionIR {
  /** The policies (`ns/name`) that isolate the pod in this direction. */
  policies: string[];
  rules: RuleIR[];
}

export interface LocalPodIR {
  /** `namespace/name` */
  pod: string;
  /** Host-side interface of the pod's veth. */
  interface: string;
  /** Source addresses the pod may use (its pod IPs and anycast addresses): anti-spoofing. */
  sources: { v4: string[]; v6: string[] };
  /** undefined: not isolated for ingress (everything may reach it). */
  ingress?: DirectionIR;
  /** undefined: not isolated for egress. */
  egress?: DirectionIR;
}

export interface NetpolIR {
  /** Local pods, sorted by interface. */
  pods: LocalPodIR[];
  addressSets: AddressSetIR[];
  portSets: PortSetIR[];
  tupleSets: TupleSetIR[];
}
