// The agent's own share of each flock ADD and DEL, phase by phase, from its log lines
// ('pod added' / 'pod deleted' carry `ms` per phase): p50 and p99 per phase and round.
import { summarize } from '@flock/testkit';

interface PhaseLine {
  message: string;
  containerID: string;
  ms: Record<string, number>;
}

function parse(line: string): PhaseLine | undefined {
  if (!line.startsWith('{') || !line.includes('"ms"')) return undefined;
  try {
    const o = JSON.parse(line) as Partial<PhaseLine>;
    if (typeof o.containerID === 'string' && o.ms && typeof o.message === 'string')
      return o as PhaseLine;
  } catch {
    // a line cut across two output chunks: left out
  }
  return undefined;
}

/**
 * Markdown: one row per command, round (container IDs `fl-<round>-<i>`) and phase. Phases
 * that ran concurrently overlap, so they need not add up to `total`.
 */
export function phaseTable(logs: readonly string[], rounds: Record<string, string>): string {
  const groups = new Map<string, Map<string, number[]>>();
  for (const line of logs) {
    const p = parse(line);
    const round = p && /^fl-([a-z]+)-\d+$/.exec(p.containerID)?.[1];
    const label = round && rounds[round];
    if (!p || !label) continue;
    const key = `${p.message === 'pod added' ? 'ADD' : 'DEL'}, ${label}`;
    const phases = groups.get(key) ?? new Map<string, number[]>();
    groups.set(key, phases);
    for (const [phase, ms] of Object.entries(p.ms)) {
      const list = phases.get(phase) ?? [];
      list.push(ms);
      phases.set(phase, list);
    }
  }
  const rows = ['| command | phase | n | p50 ms | p99 ms |', '| --- | --- | ---: | ---: | ---: |'];
  for (const [key, phases] of groups)
    for (const [phase, ms] of phases) {
      const s = summarize(ms);
      rows.push(`| ${key} | ${phase} | ${s.n} | ${s.p50.toFixed(1)} | ${s.p99.toFixed(1)} |`);
    }
  return ['\n### Inside the agent (its log lines, ms per phase)\n', ...rows].join('\n');
}
