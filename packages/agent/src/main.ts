#!/usr/bin/env node
// flock-agent: the node agent process. Settings from flags and FLOCK_* variables (config.ts).
import { HttpTransport, createLogger, loadKubeConfig } from '@flock/kube';
import { startAgent } from './agent.js';
import { loadAgentConfig } from './config.js';
import { IprouteDatapath } from './datapath/index.js';
import type { FaultPoint } from './cni/handlers.js';
import { nftPolicyApplier } from './policy/index.js';

async function main(): Promise<void> {
  const config = loadAgentConfig(process.argv.slice(2), process.env);
  const logger = createLogger('agent', config.logLevel);
  const faults = new Set((config.testFaults ?? '').split(',').filter(Boolean));
  if (faults.size)
    logger.warn('TEST-ONLY fault points armed: the agent will SIGKILL itself there', {
      faults: [...faults],
    });
  const agent = await startAgent({
    config,
    transport: new HttpTransport(loadKubeConfig(config.kubeconfig)),
    datapath: new IprouteDatapath({
      logger,
      ...(config.hostNetns ? { hostNetns: config.hostNetns } : {}),
    }),
    policyApplier: nftPolicyApplier(config.hostNetns),
    logger,
    ...(faults.size
      ? {
          fault: (point: FaultPoint) =>
            void (faults.has(point) && process.kill(process.pid, 'SIGKILL')),
        }
      : {}),
  });
  const shutdown = async (signal: string) => {
    logger.info('shutting down', { signal });
    await agent.stop();
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((error: unknown) => {
  process.stderr.write(
    `${JSON.stringify({ level: 'error', component: 'agent', message: 'agent failed', error: error instanceof Error ? error.message : String(error) })}\n`,
  );
  process.exit(1);
});
