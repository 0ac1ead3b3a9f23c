// Private IPv4 (a Pool's ipv4.mode: Private): the SNAT the policy table carries for this node,
// read from its NodeConfig on every pass, and a pass asked for when it changes (the NodeConfig
// changes far more often than its mode: every status write is an update).
import type { NodeConfigSpec } from '@flock/api';
import type { SnatOptions } from '@flock/netpol';

/** The node's private slice, translated beyond the pool's range; none unless Private. */
export function privateSnat(spec: NodeConfigSpec | undefined): SnatOptions | undefined {
  if (spec?.ipv4?.mode !== 'Private' || spec.cidr4 === undefined) return undefined;
  return { sources: [spec.cidr4], keep: spec.ipv4.clusterCIDRs ?? [spec.cidr4] };
}

/** A NodeConfig listener that calls `changed` when the SNAT it asks for is not the last one. */
export function onSnatChange(
  changed: () => void,
): (nodeConfig: { spec: NodeConfigSpec } | undefined) => void {
  let last = JSON.stringify(privateSnat(undefined));
  return (nodeConfig) => {
    const now = JSON.stringify(privateSnat(nodeConfig?.spec));
    if (now === last) return;
    last = now;
    changed();
  };
}
