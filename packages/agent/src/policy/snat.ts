// The SNAT the policy table carries for this node, read from its NodeConfig on every pass, and a
// pass asked for when it changes (the NodeConfig changes far more often than its SNAT: every
// status write is an update): a Private pool's slice (ipv4.mode: Private), the NAT64
// translator's pool (spec.nat64) and the inter-node translator's rules (ipv4.interNodePrefix).
import type { NodeConfigSpec } from '@flock/api';
import type { SnatOptions } from '@flock/netpol';
import { interNodeOf, SIIT_IFACE } from '../nat64/siit.js';
import { NAT64_IFACE } from '../nat64/tayga.js';

/**
 * The node's private slice, translated beyond the pool's range, and NAT64's pool, translated to
 * anything off the node; none when the node has neither.
 */
export function nodeSnat(spec: NodeConfigSpec | undefined): SnatOptions | undefined {
  const isPrivate = spec?.ipv4?.mode === 'Private' && spec.cidr4 !== undefined;
  if (!isPrivate && !spec?.nat64) return undefined;
  const interNode = interNodeOf(spec);
  return {
    sources: isPrivate ? [spec.cidr4!] : [],
    keep: isPrivate ? (spec.ipv4?.clusterCIDRs ?? [spec.cidr4!]) : [],
    ...(spec.nat64
      ? {
          nat64: {
            iface: NAT64_IFACE,
            pool: spec.nat64.pool,
            // The pool too: a pod dialing another's pool address at the prefix would reach it as
            // a NAT64 address. Tayga 0.9.2 drops that hairpin itself; this holds without it.
            deny: [...(spec.nat64.clusterCIDRs ?? []), spec.nat64.pool],
          },
        }
      : {}),
    ...(interNode ? { interNode: { iface: SIIT_IFACE, prefix: interNode.prefix } } : {}),
  };
}

/** A NodeConfig listener that calls `changed` when the SNAT it asks for is not the last one. */
export function onSnatChange(
  changed: () => void,
): (nodeConfig: { spec: NodeConfigSpec } | undefined) => void {
  let last = JSON.stringify(nodeSnat(undefined));
  return (nodeConfig) => {
    const now = JSON.stringify(nodeSnat(nodeConfig?.spec));
    if (now === last) return;
    last = now;
    changed();
  };
}
