// The text form of `flock-agent status`: a few aligned tables, for a person at a terminal.
import type { AgentStatus } from './snapshot.js';

function table(rows: string[][]): string[] {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) =>
    `  ${r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')}`.trimEnd(),
  );
}

/** 3725 → "1h2m5s". */
export function formatDuration(seconds: number): string {
  const s = Math.floor(seconds);
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const parts = [d && `${d}d`, (d || h) && `${h}h`, (d || h || m) && `${m}m`, `${s % 60}s`];
  return parts.filter(Boolean).join('');
}

export function formatStatus(s: AgentStatus): string {
  const lines: string[] = [];
  lines.push(
    `node ${s.node}${s.version ? `  agent ${s.version}` : ''}  ${s.ready ? 'ready' : 'NOT READY'}`,
  );
  lines.push(`BIRD: ${s.bird.state}${s.bird.message ? ` (${s.bird.message})` : ''}`);
  lines.push('', 'BGP peers:');
  if (s.peers.length === 0) lines.push('  (none)');
  else
    lines.push(
      ...table([
        ['PEER', 'ASN', 'STATE', 'UPTIME', 'ROUTES', 'INFO'],
        ...s.peers.map((p) => [
          p.address,
          p.asn === undefined ? '-' : String(p.asn),
          p.state,
          p.uptimeSeconds === undefined ? '-' : formatDuration(p.uptimeSeconds),
          p.routesExported === undefined ? '-' : String(p.routesExported),
          p.info ?? '',
        ]),
      ]),
    );
  const r = s.routesExported;
  lines.push(
    '',
    r
      ? `Routes exported: ${r.aggregate} aggregate, ${r.pinned} pinned, ${r.anycast} anycast${r.services ? `, ${r.services} service` : ''}`
      : 'Routes exported: none yet (BIRD has not accepted a config)',
  );
  lines.push(`  aggregates: ${s.announced.aggregates.join(', ') || '-'}`);
  lines.push(`  pinned:     ${s.announced.pinned.join(', ') || '-'}`);
  lines.push(
    `  anycast:    ${s.announced.anycast.map((a) => `${a.address} (${a.veths.length} pod${a.veths.length === 1 ? '' : 's'})`).join(', ') || '-'}`,
  );
  for (const a of s.announced.services ?? [])
    lines.push(`  service:    ${a.address} (${a.service}: ${a.why})`);
  lines.push('', 'Addresses:');
  lines.push(
    ...table([
      ['FAMILY', 'PREFIX', 'USED', 'FREE', 'QUARANTINED'],
      ...s.addresses.map((a) => [
        a.family,
        a.prefix,
        String(a.used),
        a.free > 1e12 ? a.free.toExponential(2) : String(a.free),
        String(a.quarantined),
      ]),
    ]),
  );
  lines.push('', `Allocations (${s.allocations.length}):`);
  if (s.allocations.length)
    lines.push(
      ...table([
        ['POD', 'IPV6', 'IPV4', 'IPV4 MODE', 'FLAGS', 'STATE'],
        ...s.allocations.map((a) => [
          `${a.namespace}/${a.pod}`,
          a.ip6,
          a.ip4 ?? '-',
          a.ipv4Mode,
          [a.pinned ? 'pinned' : '', a.anycast.length ? `anycast ${a.anycast.join(',')}` : '']
            .filter(Boolean)
            .join(' ') || '-',
          a.state,
        ]),
      ]),
    );
  if (s.claimConflicts?.length) {
    lines.push('', 'Floating addresses not held (neither announced nor sourced here):');
    lines.push(
      ...table([
        ['ADDRESS', 'POD', 'WHY'],
        ...s.claimConflicts.map((c) => [c.address, `${c.namespace}/${c.pod}`, c.why]),
      ]),
    );
  }
  const p = s.policy;
  lines.push(
    '',
    !p.enforced
      ? 'NetworkPolicy: not enforced (no applier)'
      : p.reason === undefined
        ? `NetworkPolicy: no pass yet (${p.passes} started)`
        : `NetworkPolicy: ${p.ok ? 'applied' : 'NOT APPLIED'} (${p.reason}), ${p.passes} passes: ${p.message ?? ''}`,
  );
  if (s.nat64)
    lines.push(
      `NAT64: ${s.nat64.prefix} from ${s.nat64.pool}, Tayga ${s.nat64.running ? 'running' : 'NOT RUNNING'} (${s.nat64.restarts} restarts)`,
    );
  if (s.interNode)
    lines.push(
      `Private IPv4 between nodes: ${s.interNode.prefix}, this node ${s.interNode.announced}, Tayga ${s.interNode.running ? 'running' : 'NOT RUNNING'} (${s.interNode.restarts} restarts)`,
    );
  return `${lines.join('\n')}\n`;
}
