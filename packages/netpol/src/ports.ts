// Ports of a NetworkPolicy rule as `protocol . port` ranges: numbers, endPort ranges, absent
// ports (every port of the protocol) and named ports resolved against one pod's containers.
import type { Protocol } from '@flock/api';
import type { NamedPort } from './cluster.js';
import type { PolicyPort } from './state.js';

export interface PortRange {
  protocol: Protocol;
  lo: number;
  hi: number;
}

/** nft's name of each protocol, in the order elements are written (by protocol number). */
export const NFT_PROTOCOL: Record<Protocol, string> = { TCP: 'tcp', UDP: 'udp', SCTP: 'sctp' };
const PROTOCOL_ORDER: Record<Protocol, number> = { TCP: 6, UDP: 17, SCTP: 132 };

/** Numeric part of a port entry; undefined for a named port. */
export function numericRange(p: PolicyPort): PortRange | undefined {
  const protocol = p.protocol ?? 'TCP';
  if (p.port == null) return { protocol, lo: 0, hi: 65535 };
  if (typeof p.port === 'string') return undefined;
  return { protocol, lo: p.port, hi: p.endPort ?? p.port };
}

/** Port numbers that a port name means on one pod (same name and protocol). */
export function resolveNamedPort(
  ports: readonly NamedPort[],
  name: string,
  protocol: Protocol,
): number[] {
  const out = ports.filter((p) => p.name === name && p.protocol === protocol).map((p) => p.port);
  return [...new Set(out)].sort((a, b) => a - b);
}

/** Sorted, merged ranges as nft elements, and whether the set needs `flags interval`. */
export function portElements(ranges: readonly PortRange[]): {
  elements: string[];
  interval: boolean;
} {
  const sorted = [...ranges].sort(
    (a, b) => PROTOCOL_ORDER[a.protocol] - PROTOCOL_ORDER[b.protocol] || a.lo - b.lo || a.hi - b.hi,
  );
  const merged: PortRange[] = [];
  for (const r of sorted) {
    const last = merged[merged.length - 1];
    if (last && last.protocol === r.protocol && r.lo <= last.hi + 1)
      last.hi = Math.max(last.hi, r.hi);
    else merged.push({ ...r });
  }
  return {
    elements: merged.map(
      (r) => `${NFT_PROTOCOL[r.protocol]} . ${r.lo === r.hi ? r.lo : `${r.lo}-${r.hi}`}`,
    ),
    interval: merged.some((r) => r.lo !== r.hi),
  };
}
