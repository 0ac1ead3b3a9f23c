// From the agent's settings to the routing side's: the BIRD clients and RoutingSettings.
import { dirname, join } from 'node:path';
import { BirdClient, type BirdControl } from '@flock/bird';
import type { AgentConfig } from '../core/config.js';
import type { RoutingSettings } from './routing-deps.js';

/**
 * reload: one connection attempt, because the announcer asks BIRD's socket again every 250 ms
 * while BIRD is not up and reloads with the latest model once it answers — a retry inside one
 * reload would only hold newer models back. status: one attempt per poll, so a missing BIRD is
 * reported at once.
 */
export function birdControls(socketPath: string): { reload: BirdControl; status: BirdControl } {
  return {
    reload: new BirdClient({ socketPath, attempts: 1 }),
    status: new BirdClient({ socketPath, attempts: 1, timeoutMs: 10_000 }),
  };
}

/** The BFD speaker's control socket: reloads only (its status is not polled). */
export function bfdControl(socketPath: string): BirdControl {
  return new BirdClient({ socketPath, attempts: 1 });
}

/** Beside the allocation store: the last BGP password read from each Secret (0600). */
const PASSWORD_FILE = 'bgp-passwords.json';

export function routingSettings(config: AgentConfig): RoutingSettings {
  return {
    birdConfigPath: config.birdConfigPath,
    ...(config.bfdConfigPath ? { bfdConfigPath: config.bfdConfigPath } : {}),
    ...(config.routerId ? { routerIdOverride: config.routerId } : {}),
    refreshPeriodMs: config.sweepPeriodMs,
    anycastPeriodMs: config.anycastPeriodMs,
    bgpStatusPeriodMs: config.bgpStatusPeriodMs,
    secretNamespace: config.namespace,
    passwordFile: join(dirname(config.storePath), PASSWORD_FILE),
    maxHostRoutes: config.maxHostRoutes,
  };
}
