// BIRD reloads as the agent's metrics see them: every configure through the control socket
// counted and timed by how it ended.
import { BirdCommandError, BirdUnavailableError, type BirdControl } from '@flock/bird';
import type { AgentMetrics } from '../core/metrics.js';

/** BIRD reloads counted and timed by result (ok, refused, unreachable, error). */
export function timedReloads(
  control: BirdControl,
  metrics: Pick<AgentMetrics, 'birdReloads' | 'birdReloadDuration'>,
): BirdControl {
  return {
    configure: async (options) => {
      const end = metrics.birdReloadDuration.startTimer();
      let result = 'error';
      try {
        const reply = await control.configure(options);
        result = 'ok';
        return reply;
      } catch (error) {
        if (error instanceof BirdCommandError) result = 'refused';
        else if (error instanceof BirdUnavailableError) result = 'unreachable';
        throw error;
      } finally {
        end({ result });
        metrics.birdReloads.inc({ result });
      }
    },
    showProtocols: () => control.showProtocols(),
    showProtocolsAll: (name) => control.showProtocolsAll(name),
  };
}
