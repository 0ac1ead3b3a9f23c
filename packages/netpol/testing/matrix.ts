// Probe the full from × to matrix of a scenario with real packets and compare it with the
// expected one; on mismatch, print expected and actual grids side by side per probe kind.
import type { Endpoint, PolicyLab, Probe } from './lab.js';

/** Whether one direction allows a connection; hand-written per scenario. */
export type Verdict = (from: Endpoint, to: Endpoint, probe: Probe) => boolean;

export interface Scenario {
  name: string;
  policies: unknown[];
  /** What the destination's ingress allows (default: everything). */
  ingress?: Verdict;
  /** What the source's egress allows (default: everything). */
  egress?: Verdict;
}

export const PROBES: Probe[] = (['tcp', 'udp'] as const).flatMap((proto) =>
  [80, 81].flatMap((port) => ([4, 6] as const).map((family) => ({ proto, port, family }))),
);

const probeName = (p: Probe) => `${p.proto}/${p.port} IPv${p.family}`;

/** Pairs whose packets cross the node's policy: not to itself, not between two outside hosts. */
export function probedPairs(endpoints: Endpoint[]): [Endpoint, Endpoint][] {
  const pairs: [Endpoint, Endpoint][] = [];
  for (const from of endpoints) {
    for (const to of endpoints) {
      if (from === to || to.kind === 'node' || (!from.local && !to.local)) continue;
      pairs.push([from, to]);
    }
  }
  return pairs;
}

/** Egress of a local source and ingress of a local destination must both allow; the node may always reach its pods. */
export function expected(s: Scenario, from: Endpoint, to: Endpoint, p: Probe): boolean {
  const egressOk = !from.local || (s.egress?.(from, to, p) ?? true);
  const ingressOk = !to.local || from.kind === 'node' || (s.ingress?.(from, to, p) ?? true);
  return egressOk && ingressOk;
}

async function pool<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

interface Cell {
  from: Endpoint;
  to: Endpoint;
  probe: Probe;
  want: boolean;
  got?: boolean;
  note?: string;
}

function grid(cells: Cell[], probe: Probe, endpoints: Endpoint[]): string {
  const mine = cells.filter((c) => c.probe === probe);
  const sources = endpoints;
  const dests = endpoints.filter((e) => e.kind !== 'node');
  const w = Math.max(...endpoints.map((e) => e.ref.length)) + 1;
  const mark = (from: Endpoint, to: Endpoint, key: 'want' | 'got') => {
    const c = mine.find((x) => x.from === from && x.to === to);
    if (!c) return '-';
    return c[key] ? 'X' : '.';
  };
  const head = (label: string) =>
    `${label.padEnd(w)}${dests.map((d) => d.ref.padStart(5)).join('')}`;
  const lines = [
    `${probeName(probe)}: expected (left) vs actual (right); X allowed, . denied, - not probed`,
  ];
  lines.push(`${head('from\\to')}   |   ${head('from\\to')}`);
  for (const from of sources) {
    const row = (key: 'want' | 'got') =>
      `${from.ref.padEnd(w)}${dests.map((to) => mark(from, to, key).padStart(5)).join('')}`;
    const differs = dests.some((to) => mark(from, to, 'want') !== mark(from, to, 'got'));
    lines.push(`${row('want')}   | ${differs ? '!' : ' '} ${row('got')}`);
  }
  return lines.join('\n');
}

/** Apply the scenario and probe every pair; resolves with a report of mismatches ('' when none). */
export async function runScenario(lab: PolicyLab, s: Scenario): Promise<string> {
  await lab.apply(s.policies);
  const endpoints = lab.allEndpoints();
  const cells: Cell[] = probedPairs(endpoints).flatMap(([from, to]) =>
    PROBES.map((probe) => ({ from, to, probe, want: expected(s, from, to, probe) })),
  );
  const probeCell = async (c: Cell, timeoutMs: number) => {
    const answer = await lab.probe(c.from.ref, c.to.ref, c.probe, timeoutMs);
    c.got = answer.ok && answer.reply === c.to.ref;
    if (answer.ok && answer.reply !== c.to.ref) c.note = `answered by ${answer.reply}`;
  };
  await pool(cells, 96, (c) => probeCell(c, 500));
  // A denial may be a slow machine: probe unexpected denials again, patiently.
  await pool(
    cells.filter((c) => c.want && !c.got),
    16,
    (c) => probeCell(c, 3000),
  );
  const wrong = cells.filter((c) => c.got !== c.want);
  if (wrong.length === 0) return '';
  const kinds = PROBES.filter((p) => wrong.some((c) => c.probe === p));
  return [
    `scenario "${s.name}": ${wrong.length} of ${cells.length} probes differ`,
    ...wrong
      .filter((c) => c.note)
      .map((c) => `${c.from.ref} → ${c.to.ref} ${probeName(c.probe)}: ${c.note}`),
    ...kinds.map((p) => grid(cells, p, endpoints)),
  ].join('\n\n');
}
