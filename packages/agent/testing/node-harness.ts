// Test infrastructure: one simulated node — a network namespace for its
// datapath, the real agent process (on the machine's loopback, next to the API server, with
// --host-netns pointing at the node namespace), and the real CNI plugin driven by the
// reference runtime client cnitool. Used by the agent's cluster tests and the lab.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { flockConflist } from '@flock/api';
import { run, type RunResult } from '@flock/exec';
import { repoRoot, requireTools, type ControlPlane, type Netns } from '@flock/testkit';
import { nodeBirdPaths } from '@flock/bird/testing';
import { installPlugin, type PluginInstall } from './plugin-process.js';

const repo = repoRoot(import.meta.dirname);
export const AGENT_MAIN = join(repo, 'packages', 'agent', 'dist', 'src', 'main.js');
export const NETWORK_NAME = 'flock';

export interface AgentProcess {
  child: ChildProcess;
  /** Everything the agent logged (JSON lines). */
  logs: string[];
  /** Resolves with the exit code (or signal). */
  exited: Promise<number | string>;
  stop(): Promise<void>;
  kill(): Promise<void>;
}

export interface NodeOptions {
  cp: ControlPlane;
  nodeName: string;
  netns: Netns;
  /** Working directory for the socket, store and CNI config. */
  dir: string;
  extraArgs?: string[];
}

export class TestNode {
  readonly socketPath: string;
  readonly storePath: string;
  readonly binDir: string;
  readonly confDir: string;
  /** The node's bird.conf and BIRD control socket (the agent's defaults here; startNodeBird). */
  readonly birdConfigPath: string;
  readonly birdSocketPath: string;
  agent: AgentProcess | undefined;
  private plugin: PluginInstall | undefined;

  constructor(readonly options: NodeOptions) {
    this.socketPath = join(options.dir, 'run', 'cni.sock');
    this.storePath = join(options.dir, 'lib', 'allocations.json');
    this.binDir = join(options.dir, 'cni-bin');
    this.confDir = join(options.dir, 'cni-conf');
    const bird = nodeBirdPaths(options.dir);
    this.birdConfigPath = bird.configPath;
    this.birdSocketPath = bird.socketPath;
  }

  /** Install the plugin (launcher + bundle) and a conflist that points at this node's socket. */
  async installPlugin(): Promise<void> {
    requireTools('cnitool', 'nsenter');
    this.plugin = await installPlugin(this.binDir);
    await mkdir(this.confDir, { recursive: true });
    const conflist = flockConflist({
      name: NETWORK_NAME,
      socketPath: this.socketPath,
      timeoutMs: 30_000,
    });
    await writeFile(join(this.confDir, '10-flock.conflist'), JSON.stringify(conflist, null, 2));
  }

  /** Start the agent process; resolves once it logs that it is ready (or rejects if it exits). */
  async startAgent(extraArgs: string[] = []): Promise<AgentProcess> {
    const { cp, nodeName, netns } = this.options;
    const args = [
      AGENT_MAIN,
      '--node-name',
      nodeName,
      '--kubeconfig',
      cp.kubeconfigPath,
      '--socket',
      this.socketPath,
      '--store',
      this.storePath,
      '--host-netns',
      netns.path,
      '--health-port',
      '0',
      '--resync',
      '2s',
      // Never the machine's /run: BIRD's files live in the test directory.
      '--bird-config',
      this.birdConfigPath,
      '--bird-socket',
      this.birdSocketPath,
      '--nat64-dir',
      join(dirname(this.storePath), 'nat64'),
      ...(this.options.extraArgs ?? []),
      ...extraArgs,
    ];
    const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const logs: string[] = [];
    const collect = (chunk: Buffer) => logs.push(...chunk.toString().split('\n').filter(Boolean));
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    const exited = new Promise<number | string>((resolve) =>
      child.once('exit', (code, signal) => resolve(code ?? signal ?? -1)),
    );
    const agent: AgentProcess = {
      child,
      logs,
      exited,
      async stop() {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
        await exited;
      },
      async kill() {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
        await exited;
      },
    };
    this.agent = agent;
    await new Promise<void>((resolve, reject) => {
      const timer = setInterval(() => {
        if (logs.some((l) => l.includes('start-up: ready'))) {
          clearInterval(timer);
          resolve();
        }
      }, 50);
      void exited.then((code) => {
        clearInterval(timer);
        reject(
          new Error(`agent exited (${code}) before it was ready:\n${logs.slice(-20).join('\n')}`),
        );
      });
    });
    return agent;
  }

  /** Run cnitool COMMAND for a pod's namespace (as a container runtime would). */
  cnitool(
    command: 'add' | 'del' | 'check' | 'gc' | 'status',
    podNetns: string,
    pod?: { namespace: string; name: string; uid?: string },
  ): Promise<RunResult> {
    const cniArgs = pod
      ? [
          `K8S_POD_NAMESPACE=${pod.namespace}`,
          `K8S_POD_NAME=${pod.name}`,
          ...(pod.uid ? [`K8S_POD_UID=${pod.uid}`] : []),
        ].join(';')
      : undefined;
    return run('cnitool', [command, NETWORK_NAME, podNetns], {
      env: {
        CNI_PATH: this.binDir,
        NETCONFPATH: this.confDir,
        FLOCK_NODE: this.plugin?.node ?? process.execPath,
        ...(cniArgs ? { CNI_ARGS: cniArgs } : {}),
      },
      timeoutMs: 60_000,
    });
  }

  /** The container ID cnitool derives for a namespace path (sha512 of the path, 10 bytes). */
  static async cnitoolContainerId(netnsPath: string): Promise<string> {
    const { createHash } = await import('node:crypto');
    return `cnitool-${createHash('sha512').update(netnsPath).digest('hex').slice(0, 20)}`;
  }
}
