// Probes of what reaches a namespace, for the hostile-tenant suite: a command in a namespace,
// pings from a chosen source, and a count of the packets that arrive from each source.
import { run } from '@flock/exec';
import { inNetns, type NetnsRef } from '../core/workloads.js';

/** Run `file args` in `ref`'s namespace; `okCodes` are the exit codes that are no failure. */
export const inRef = (ref: NetnsRef, file: string, args: string[], okCodes = [0]) => {
  const c = inNetns(ref, file, args);
  return run(c.file, c.args, { okCodes, timeoutMs: 60_000 });
};

/**
 * Counts, in `ref`'s namespace and before anything else there, the packets that arrive from each
 * source: a table of our own (`hostile_count`), made afresh.
 */
export async function countArrivals(ref: NetnsRef, sources: string[]) {
  await inRef(ref, 'nft', ['delete', 'table', 'inet', 'hostile_count'], [0, 1]);
  const rules = sources.map(
    (s) => `add rule inet hostile_count pre ${s.includes(':') ? 'ip6' : 'ip'} saddr ${s} counter`,
  );
  const script = [
    'add table inet hostile_count',
    'add chain inet hostile_count pre { type filter hook prerouting priority -400; }',
    ...rules,
    '',
  ].join('\n');
  const c = inNetns(ref, 'nft', ['-f', '-']);
  await run(c.file, c.args, { input: script, timeoutMs: 30_000 });
  return async (): Promise<Record<string, number>> => {
    const { stdout } = await inRef(ref, 'nft', [
      '-j',
      'list',
      'chain',
      'inet',
      'hostile_count',
      'pre',
    ]);
    const out: Record<string, number> = {};
    for (const o of (JSON.parse(stdout) as { nftables: { rule?: { expr: unknown[] } }[] })
      .nftables) {
      if (!o.rule) continue;
      const expr = o.rule.expr as { match?: { right?: string }; counter?: { packets: number } }[];
      const src = expr.find((e) => e.match)?.match?.right;
      const packets = expr.find((e) => e.counter)?.counter?.packets;
      if (src !== undefined && packets !== undefined) out[src] = packets;
    }
    return out;
  };
}

/** Three pings from `from` with this source to `to` (answers or not). */
export async function pings(from: NetnsRef, source: string, to: string): Promise<void> {
  const family = to.includes(':') ? '-6' : '-4';
  await inRef(
    from,
    'ping',
    [family, '-c', '3', '-i', '0.2', '-W', '1', '-I', source, to],
    [0, 1, 2],
  );
}
