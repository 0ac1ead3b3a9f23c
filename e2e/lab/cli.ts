#!/usr/bin/env node
// `npm run lab [-- COMMAND]`: a whole flock cluster on one machine (see docs/lab.md).
//   up [--nodes N] [--processes]  bring the lab up, print its status, stay until Ctrl-C
//                         (default): flock from its images with `helm install`, as users
//                         install it; --processes: agents and operator as plain processes
//   down                  clean up after a crash (processes, namespaces, state)
//   status                nodes, NodeConfigs, pods, router routes, reachability
//   kubectl ARGS...       kubectl with the lab's kubeconfig
//   exec NS/POD -- CMD... a command in the pod's container (kubectl exec)
//   kill-node NODE        the node dies: every process of it is killed, its uplink goes down
//   kill-kubelet NODE     only the node's kubelet dies (containers, agent and BIRD live on)
import { spawn } from 'node:child_process';
import { setTimeout as delay } from 'node:timers/promises';
import { createLogger } from '@flock/kube';
import { cleanup, labNamespaces } from './core/cleanup.js';
import { Lab } from './core/lab.js';
import { LAB_DIR, MAX_NODES } from './core/plan.js';
import { readState, requestKill, takeKillRequests, type LabState } from './core/state.js';
import { statusReport } from './probes/status.js';
import { applySamples } from './core/workloads.js';

const say = (line: string) => console.log(`flock lab: ${line}`);

async function running(): Promise<LabState> {
  const state = await readState(LAB_DIR);
  if (!state) throw new Error('no lab is running (start one with `npm run lab`)');
  return state;
}

function inherit(file: string, args: string[]): Promise<number> {
  const child = spawn(file, args, { stdio: 'inherit' });
  return new Promise((resolve) => child.on('exit', (code) => resolve(code ?? 1)));
}

async function up(args: string[]): Promise<void> {
  const at = args.indexOf('--nodes');
  const nodes = at >= 0 ? Number(args[at + 1]) : 3;
  if (!Number.isInteger(nodes) || nodes < 1 || nodes > MAX_NODES)
    throw new Error(`--nodes: 1..${MAX_NODES}`);
  if (await readState(LAB_DIR))
    throw new Error('a lab seems to be running (or crashed): `npm run lab -- down` first');
  const leftovers = await labNamespaces();
  if (leftovers.length)
    throw new Error(
      `leftover lab namespaces (${leftovers.join(', ')}): run \`npm run lab -- down\``,
    );
  const lab = new Lab({
    nodes,
    install: args.includes('--processes') ? 'processes' : 'helm',
    dir: LAB_DIR,
    log: createLogger('lab', 'warn'),
    progress: (l) => say(`starting: ${l}`),
  });
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      say('tearing down ...');
      await lab.down();
      say('down');
    })();
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  const started = Date.now();
  await lab.up();
  say(
    `up in ${Math.round((Date.now() - started) / 1000)} s; samples: Deployment web (${nodes} replicas), anycast service, pinned pod, NetworkPolicy in shop`,
  );
  await applySamples(lab, nodes);
  await lab.saveState();
  console.log(`\n${await statusReport(await running())}`);
  say(
    'running; Ctrl-C to stop. Other terminals: npm run lab -- status | kubectl get pods -A | kill-node NODE',
  );
  while (!stopping) {
    for (const { kind, node } of await takeKillRequests(LAB_DIR)) {
      const kill = kind === 'kill-node' ? lab.killNode(node) : lab.killKubelet(node);
      await kill.then(
        () => say(`${kind} ${node}: done`),
        (e: unknown) => say(`${kind} ${node}: ${(e as Error).message}`),
      );
    }
    await delay(500);
  }
  await stopping;
}

async function main(argv: string[]): Promise<number> {
  const [command = 'up', ...rest] = argv;
  switch (command) {
    case 'up':
      await up(rest);
      return 0;
    case 'down':
      await cleanup(LAB_DIR, say);
      say('clean');
      return 0;
    case 'status':
      console.log(await statusReport(await running()));
      return 0;
    case 'kubectl':
      return inherit('kubectl', ['--kubeconfig', (await running()).kubeconfig, ...rest]);
    case 'exec': {
      const [pod, dashes, cmd, ...cmdArgs] = rest;
      if (!pod || dashes !== '--' || !cmd) throw new Error('usage: exec NS/POD -- CMD [ARGS...]');
      const [namespace, name] = pod.split('/');
      if (!namespace || !name) throw new Error('usage: exec NS/POD -- CMD [ARGS...]');
      const { kubeconfig } = await running();
      return inherit('kubectl', [
        ...['--kubeconfig', kubeconfig, 'exec', '-n', namespace, name, '--'],
        ...[cmd, ...cmdArgs],
      ]);
    }
    case 'kill-node':
    case 'kill-kubelet': {
      const [node] = rest;
      if (!node) throw new Error(`usage: ${command} NODE`);
      await running();
      await requestKill(LAB_DIR, command, node);
      say(`asked the lab to ${command} ${node}`);
      return 0;
    }
    default:
      throw new Error(
        `unknown command ${command} (up, down, status, kubectl, exec, kill-node, kill-kubelet)`,
      );
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (e: unknown) => {
    console.error(`flock lab: ${e instanceof Error ? e.message : String(e)}`);
    process.exit(1);
  },
);
