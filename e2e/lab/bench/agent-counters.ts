// What the agents did in a bench turn, from their own /metrics (each node's agent, as the chart
// runs it: its health port on the node's addresses): policy passes, BIRD reloads, announcement
// passes and CNI requests, summed over the nodes. Best effort: a figure that cannot be read is
// reported as such, never fails the benchmark.
import type { Lab } from '../core/lab.js';
import { fetchInNode } from './kube-proxy-metrics.js';

const AGENT_METRICS = 'http://127.0.0.1:9901/metrics';

/** The counters, by what they count. */
const COUNTED: Record<string, (name: string, labels: string) => boolean> = {
  'CNI ADDs': (n, l) => n === 'flock_agent_cni_requests_total' && l.includes('command="ADD"'),
  // containerd runs the plugin's STATUS for the kubelet's runtime status (every 5 s a node).
  'CNI STATUS': (n, l) => n === 'flock_agent_cni_requests_total' && l.includes('command="STATUS"'),
  'policy passes': (n) => n === 'flock_agent_policy_pass_duration_seconds_count',
  'announcement passes': (n, l) =>
    n === 'flock_agent_loop_runs_total' && l.includes('loop="announcements"'),
  'BIRD reloads': (n, l) => n === 'flock_agent_bird_reloads_total' && !l.includes('unreachable'),
  // What the agent's children are made of: a process started each.
  'ip runs': (n, l) => n === 'flock_agent_commands_total' && l.includes('program="ip"'),
  'nft runs': (n, l) => n === 'flock_agent_commands_total' && l.includes('program="nft"'),
  'other commands': (n, l) => n === 'flock_agent_commands_total' && !/program="(ip|nft)"/.test(l),
};

export type AgentCounters = Map<string, number>;

const SAMPLE = /^([a-zA-Z_:][\w:]*)(\{.*\})? (\S+)$/;

export async function readAgentCounters(lab: Lab): Promise<AgentCounters | undefined> {
  const out: AgentCounters = new Map(Object.keys(COUNTED).map((k) => [k, 0]));
  try {
    for (let i = 0; i < lab.nodes.length; i++)
      for (const line of (await fetchInNode(lab, i, AGENT_METRICS)).split('\n')) {
        const m = SAMPLE.exec(line);
        if (!m) continue;
        for (const [what, counts] of Object.entries(COUNTED))
          if (counts(m[1]!, m[2] ?? '')) out.set(what, out.get(what)! + Number(m[3]));
      }
  } catch {
    return undefined;
  }
  return out;
}

/** "n what (x per pod), …" between two readings. */
export function describeCounters(
  before: AgentCounters | undefined,
  after: AgentCounters | undefined,
  pods: number,
): string {
  if (!before || !after) return 'agent counters unavailable';
  return [...after]
    .map(([what, n]) => {
      const d = n - (before.get(what) ?? 0);
      return `${d} ${what} (${(d / pods).toFixed(2)} a pod)`;
    })
    .join(', ');
}
