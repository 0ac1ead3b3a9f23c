// CPU per ADD and per DEL, candidate by candidate: the plugin processes (what the bench, their
// runtime here, reaps: the plugin with whatever it started, e.g. host-local under ptp) and, for
// flock, the agent with everything below it (its spawn server and the ip / nft processes that
// runs). Each candidate runs its round alone, pod after pod, so that every reaped millisecond
// is its own. The agent's idle use (timers, watches) over the round is measured just before it
// and taken off. CPU time, not wall time: machine noise moves it far less.
import { setTimeout as delay } from 'node:timers/promises';
import { procCpu, treeCpuMs } from '../proc-cpu.js';
import type { Candidate } from './candidates.js';

/** ms per operation: the plugin processes, the agent process, what the agent ran below it. */
export interface OpCpu {
  plugin: number;
  agent: number;
  children: number;
}

export interface CpuRound {
  name: string;
  pods: number;
  /** ms per operation. */
  add: OpCpu;
  del: OpCpu;
  /** The agent's idle use, ms per second (taken off `agent`). */
  agentIdle: number;
}

/** After the last operation the agent may still be in a pass it triggered: wait that out. */
const SETTLE_MS = 1_500;
const IDLE_MS = 3_000;

const reapedMs = async () => (await procCpu('self'))!.reaped;

export async function cpuRound(
  c: Candidate,
  pods: number,
  agentPid: number | undefined,
): Promise<CpuRound> {
  // [the agent process, everything below it]
  const agentMs = async (): Promise<[number, number]> => {
    if (agentPid === undefined) return [0, 0];
    const own = (await procCpu(agentPid))?.own ?? 0;
    return [own, (await treeCpuMs(agentPid)) - own];
  };
  const i0 = await agentMs();
  const t0 = performance.now();
  await delay(IDLE_MS);
  const i1 = await agentMs();
  const idle = [0, 1].map((k) => (i1[k]! - i0[k]!) / (performance.now() - t0));
  const measure = async (op: 'add' | 'del'): Promise<OpCpu> => {
    const plugin0 = await reapedMs();
    const agent0 = await agentMs();
    const start = performance.now();
    for (let i = 0; i < pods; i++) await c[op](i, 'c');
    const plugin = (await reapedMs()) - plugin0;
    await delay(SETTLE_MS);
    const agent1 = await agentMs();
    const elapsed = performance.now() - start;
    const net = (k: number) => Math.max(0, agent1[k]! - agent0[k]! - idle[k]! * elapsed) / pods;
    return { plugin: plugin / pods, agent: net(0), children: net(1) };
  };
  const add = await measure('add');
  const del = await measure('del');
  return { name: c.name, pods, add, del, agentIdle: (idle[0]! + idle[1]!) * 1000 };
}

/** Markdown: CPU ms per operation and the ratio of each total to the reference's. */
export function cpuTable(rounds: readonly CpuRound[], ref: string): string {
  const base = rounds.find((r) => r.name === ref);
  const ratio = (x: number, b: number | undefined) => (b ? `×${(x / b).toFixed(2)}` : '—');
  const total = (x: OpCpu) => x.plugin + x.agent + x.children;
  const rows = [
    `| CPU ms per operation (${rounds[0]?.pods ?? 0} pods, one candidate at a time) | ADD: plugin | ADD: agent | ADD: agent's children | ADD total | / ${ref} | DEL: plugin | DEL: agent | DEL: agent's children | DEL total | / ${ref} |`,
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  const cells = (x: OpCpu, b: OpCpu | undefined) =>
    `${x.plugin.toFixed(1)} | ${x.agent.toFixed(1)} | ${x.children.toFixed(1)} | ${total(x).toFixed(1)} | ${ratio(total(x), b && total(b))}`;
  for (const r of rounds)
    rows.push(`| ${r.name} | ${cells(r.add, base?.add)} | ${cells(r.del, base?.del)} |`);
  const idle = rounds.find((r) => r.agentIdle > 0);
  return [
    '\n### CPU per operation (plugin processes as reaped by their runtime; the agent with its children, idle use taken off)\n',
    ...rows,
    ...(idle
      ? [`\nThe agent's idle use before its round: ${idle.agentIdle.toFixed(1)} ms/s.`]
      : []),
  ].join('\n');
}
