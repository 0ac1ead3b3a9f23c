#!/usr/bin/env node
// flock-agent: the node agent process. Settings from flags and FLOCK_* variables (config.ts).
import { writeSync } from 'node:fs';
import { SpawnServer, setRunner } from '@flock/exec';
import { HttpTransport, createLogger, loadKubeConfig, readCommandLine } from '@flock/kube';
import { startAgent } from './agent.js';
import { AGENT_FLAGS } from './core/config.js';
import { IprouteDatapath } from './datapath/index.js';
import { faultInjector, parseFaultSpec, type FaultPoint } from './core/faults.js';
import { netnsName, nftListTable, nftPolicyApplier } from './policy/index.js';
import { hostTranslatorEdge, InterNodeTranslator, Nat64Translator } from './nat64/index.js';
import { nftReadKubeProxy } from './routing/kube-proxy-rules.js';
import { statusCommand } from './status/command.js';
import { faultFileSystem } from './store/fault-file-system.js';
import { agentVersion } from './core/version.js';

async function main(): Promise<void> {
  if (process.argv[2] === 'status') {
    process.exitCode = await statusCommand(process.argv.slice(3));
    return;
  }
  const config = readCommandLine(AGENT_FLAGS, {
    argv: process.argv.slice(2),
    env: process.env,
    version: agentVersion,
  });
  if (!config) return;
  const logger = createLogger('agent', config.logLevel);
  // Every ip, nft and birdc runs from a small child process: a fork from the agent's own,
  // far bigger, memory costs ten times as much (see @flock/exec's spawn server).
  const spawner = config.spawn === 'server' ? new SpawnServer() : undefined;
  if (spawner) setRunner(spawner.run);
  const armed = parseFaultSpec(config.testFaults ?? '');
  if (armed.size)
    logger.warn('TEST-ONLY fault points armed: the agent will SIGKILL itself there', {
      faults: [...armed].map(([point, n]) => `${point}#${n}`),
    });
  // Points fire only once start-up is over: the start-up sweep itself tears down and writes.
  let live = false;
  const inject = faultInjector(armed, (point) => {
    // Written synchronously: the kill follows at once and the crash test reads this line.
    writeSync(
      2,
      `${JSON.stringify({ level: 'warn', message: 'TEST-ONLY fault point reached: SIGKILL', point })}\n`,
    );
    process.kill(process.pid, 'SIGKILL');
  });
  const fault = (point: FaultPoint) => (live ? inject(point) : undefined);
  // Both Tayga translators: one directory (their files apart by name), one edge.
  const translatorEdge = hostTranslatorEdge(
    logger,
    config.hostNetns === undefined ? undefined : netnsName(config.hostNetns),
  );
  const translatorOptions = { dir: config.nat64Dir, tayga: config.tayga, logger };
  const agent = await startAgent({
    config,
    transport: new HttpTransport(loadKubeConfig(config.kubeconfig)),
    datapath: new IprouteDatapath({
      logger,
      procSys: config.procSys,
      ...(config.hostNetns ? { hostNetns: config.hostNetns } : {}),
      ...(armed.size ? { fault } : {}),
    }),
    policyApplier: nftPolicyApplier(config.hostNetns),
    nat64: new Nat64Translator(translatorEdge, translatorOptions),
    interNode: new InterNodeTranslator(translatorEdge, translatorOptions),
    policyListing: nftListTable(config.hostNetns),
    readKubeProxy: nftReadKubeProxy(
      config.hostNetns === undefined ? undefined : netnsName(config.hostNetns),
    ),
    logger,
    ...(armed.size ? { fault, storeFileSystem: faultFileSystem(fault) } : {}),
  });
  live = true;
  const shutdown = async (signal: string) => {
    logger.info('shutting down', { signal });
    await agent.stop();
    await spawner?.stop();
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
