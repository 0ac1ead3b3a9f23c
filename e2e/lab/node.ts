// One lab node: a namespace wired to the router, the real flock agent (a host-namespace process
// with --host-netns pointing at the node's namespace, as the agent's own cluster tests run it)
// and the node's BIRD inside the namespace, started once the agent has written its config.
import { spawn, type ChildProcess } from 'node:child_process';
import { access, mkdir, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { BirdProcess, type BirdPaths } from '@flock/bird';
import { Netns } from '@flock/testkit';
import { NODE_NS_PREFIX, type NodePlan } from './plan.js';

const require = createRequire(import.meta.url);
export const AGENT_MAIN = join(
  dirname(require.resolve('@flock/agent/package.json')),
  'dist',
  'main.js',
);
export const CNI_NETWORK = 'flock';

/** A child process whose output is kept (bounded) for failure messages. */
export interface Daemon {
  child: ChildProcess;
  logs: string[];
  exited: Promise<number | string>;
}

export function startDaemon(file: string, args: string[]): Daemon {
  // Own process group: Ctrl-C in the lab's terminal reaches the lab, which stops them in order.
  const child = spawn(file, args, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const logs: string[] = [];
  const keep = (chunk: Buffer) => {
    logs.push(...chunk.toString().split('\n').filter(Boolean));
    logs.splice(0, Math.max(0, logs.length - 500));
  };
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  const exited = new Promise<number | string>((resolve) =>
    child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)),
  );
  return { child, logs, exited };
}

export async function stopDaemon(
  d: Daemon | undefined,
  signal: NodeJS.Signals = 'SIGTERM',
): Promise<void> {
  if (!d || d.child.exitCode !== null || d.child.signalCode !== null) return;
  d.child.kill(signal);
  const timer = setTimeout(() => d.child.kill('SIGKILL'), 10_000);
  await d.exited;
  clearTimeout(timer);
}

export class LabNode {
  agent: Daemon | undefined;
  bird: BirdProcess | undefined;
  readonly birdPaths: BirdPaths;
  readonly socketPath: string;
  readonly confDir: string;

  private constructor(
    readonly plan: NodePlan,
    readonly ns: Netns,
    readonly dir: string,
  ) {
    this.birdPaths = {
      configPath: join(dir, 'bird.conf'),
      socketPath: join(dir, 'bird.ctl'),
      pidPath: join(dir, 'bird.pid'),
    };
    this.socketPath = join(dir, 'run', 'cni.sock');
    this.confDir = join(dir, 'cni-conf');
  }

  /** The node namespace (forwarding on) and its CNI conflist pointing at its agent's socket. */
  static async create(plan: NodePlan, labDir: string): Promise<LabNode> {
    const ns = await Netns.create(NODE_NS_PREFIX);
    const node = new LabNode(plan, ns, join(labDir, plan.name));
    try {
      await ns.exec('sysctl', ['-qw', 'net.ipv6.conf.all.forwarding=1']);
      await mkdir(node.confDir, { recursive: true });
      const conflist = {
        cniVersion: '1.1.0',
        name: CNI_NETWORK,
        plugins: [{ type: 'flock', socketPath: node.socketPath, timeoutMs: 30_000 }],
      };
      await writeFile(join(node.confDir, '10-flock.conflist'), JSON.stringify(conflist, null, 2));
    } catch (e) {
      await ns.destroy();
      throw e;
    }
    return node;
  }

  /** Start the agent; resolves once it is ready (it waits for its NodeConfig first). */
  async startAgent(kubeconfig: string, timeoutMs = 120_000): Promise<void> {
    const agent = startDaemon(process.execPath, [
      AGENT_MAIN,
      ...['--node-name', this.plan.name, '--kubeconfig', kubeconfig],
      ...['--socket', this.socketPath, '--store', join(this.dir, 'lib', 'allocations.json')],
      ...['--host-netns', this.ns.path, '--health-port', '0', '--resync', '5s'],
      ...['--bird-config', this.birdPaths.configPath, '--bird-socket', this.birdPaths.socketPath],
    ]);
    this.agent = agent;
    const deadline = Date.now() + timeoutMs;
    let exitCode: number | string | undefined;
    void agent.exited.then((c) => (exitCode = c));
    while (!agent.logs.some((l) => l.includes('start-up: ready'))) {
      if (exitCode !== undefined)
        throw new Error(
          `agent of ${this.plan.name} exited (${exitCode}):\n${agent.logs.slice(-15).join('\n')}`,
        );
      if (Date.now() > deadline)
        throw new Error(
          `agent of ${this.plan.name} not ready in time:\n${agent.logs.slice(-15).join('\n')}`,
        );
      await delay(200);
    }
  }

  /** Start BIRD in the node namespace once the agent has written bird.conf. */
  async startBird(timeoutMs = 30_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (
      !(await access(this.birdPaths.configPath).then(
        () => true,
        () => false,
      ))
    ) {
      if (Date.now() > deadline) throw new Error(`agent of ${this.plan.name} wrote no bird.conf`);
      await delay(200);
    }
    this.bird = await BirdProcess.start((f, a) => this.ns.spawn(f, a), this.birdPaths);
  }

  /** BIRD dies (SIGKILL); the agent and the pods stay. */
  killBird(): void {
    this.bird?.child.kill('SIGKILL');
    this.bird = undefined;
  }

  /** Stop the agent (SIGTERM) and start it again, pods and BIRD left running. */
  async restartAgent(kubeconfig: string): Promise<void> {
    await stopDaemon(this.agent);
    await this.startAgent(kubeconfig);
  }

  /**
   * A node losing power: agent and BIRD die at once and the uplink goes dark (without that,
   * BGP graceful restart would keep the router forwarding to it); the namespace stays.
   */
  async powerOff(): Promise<void> {
    await stopDaemon(this.agent, 'SIGKILL');
    this.bird?.child.kill('SIGKILL');
    this.bird = undefined;
    await this.ns.exec('ip', ['link', 'set', 'uplink', 'down']);
  }

  async destroy(): Promise<void> {
    await stopDaemon(this.agent);
    await this.bird?.stop();
    this.bird = undefined;
    await this.ns.destroy();
  }
}
