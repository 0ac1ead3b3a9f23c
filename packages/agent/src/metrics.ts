// The agent's Prometheus metrics: CNI command latency and errors, allocations.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

interface AgentMetrics {
  cniDuration: Histogram<'command' | 'result'>;
  cniErrors: Counter<'command' | 'code'>;
  allocations: Gauge<'family'>;
}

export function createAgentMetrics(registry: Registry): AgentMetrics {
  return {
    cniDuration: new Histogram({
      name: 'flock_agent_cni_duration_seconds',
      help: 'Time the agent spent on a CNI command (socket request to reply).',
      labelNames: ['command', 'result'],
      buckets: [0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
    cniErrors: new Counter({
      name: 'flock_agent_cni_errors_total',
      help: 'CNI commands answered with an error, by CNI error code.',
      labelNames: ['command', 'code'],
      registers: [registry],
    }),
    allocations: new Gauge({
      name: 'flock_agent_allocations',
      help: 'Committed addresses on this node.',
      labelNames: ['family'],
      registers: [registry],
    }),
  };
}
