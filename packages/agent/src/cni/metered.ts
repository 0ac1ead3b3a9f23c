// Every CNI request counted and timed by command and outcome, and every error by its CNI code
// (flock_agent_cni_*; docs/metrics.md).
import type { AgentRequest, AgentResponse } from '@flock/api';
import type { AgentMetrics } from '../core/metrics.js';

export function metered(
  handle: (request: AgentRequest) => Promise<AgentResponse>,
  metrics: Pick<AgentMetrics, 'cniRequests' | 'cniDuration' | 'cniErrors'>,
): (request: AgentRequest) => Promise<AgentResponse> {
  return async (request) => {
    const started = process.hrtime.bigint();
    const response = await handle(request);
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const result = response.ok ? 'ok' : 'error';
    metrics.cniRequests.inc({ command: request.command, result });
    metrics.cniDuration.observe({ command: request.command, result }, seconds);
    if (!response.ok)
      metrics.cniErrors.inc({ command: request.command, code: String(response.error.code) });
    return response;
  };
}
