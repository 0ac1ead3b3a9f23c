// The agent as production runs it: inside the node's network namespace, running `ip` and `nft`
// directly (no --host-netns, so no nsenter / `ip netns exec` per command, which the test
// harness's agent pays). The API server listens on the machine's loopback, which a namespace
// cannot reach, so a two-legged proxy bridges it through a unix socket (sockets on the file
// system are not bound to a network namespace): 127.0.0.1:<port> in the node namespace →
// unix socket → the API server. The machine's namespace is never touched.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { connect, createServer, type Server } from 'node:net';
import { join } from 'node:path';
import type { ControlPlane, Netns } from '@flock/testkit';
import { AGENT_MAIN } from '@flock/agent/testing';

const NODE_SIDE = `
const net = require('node:net');
const [port, path] = process.argv.slice(-2);
net.createServer((c) => {
  const u = net.connect(path);
  c.pipe(u).pipe(c);
  c.on('error', () => u.destroy());
  u.on('error', () => c.destroy());
}).listen(Number(port), '127.0.0.1', () => console.log('ready'));
`;

export interface AgentInNode {
  pid: number;
  logs: string[];
  stop(): Promise<void>;
}

export async function startAgentInNode(o: {
  cp: ControlPlane;
  netns: Netns;
  dir: string;
  nodeName: string;
  socketPath: string;
  storePath: string;
  birdConfigPath: string;
  birdSocketPath: string;
  /** Node.js flags for the agent (heap sizes, --cpu-prof). */
  nodeArgs?: string[];
}): Promise<AgentInNode> {
  const port = Number(new URL(o.cp.server).port);
  const bridge = join(o.dir, 'api.sock');
  const host: Server = createServer((c) => {
    const u = connect(port, '127.0.0.1');
    c.pipe(u).pipe(c);
    c.on('error', () => u.destroy());
    u.on('error', () => c.destroy());
  });
  host.listen(bridge);
  await once(host, 'listening');
  const children: ChildProcess[] = [];
  const inNode = (args: string[]) => {
    const child = spawn('nsenter', [`--net=${o.netns.path}`, process.execPath, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    children.push(child);
    return child;
  };
  const stop = async () => {
    for (const c of children.reverse())
      if (c.exitCode === null && c.signalCode === null) {
        c.kill('SIGTERM');
        await once(c, 'exit');
      }
    host.close();
  };
  try {
    const proxy = inNode(['-e', NODE_SIDE, String(port), bridge]);
    await waitFor(proxy, (line) => line === 'ready', 'the API proxy in the node namespace');
    const agent = inNode([
      ...(o.nodeArgs ?? []),
      AGENT_MAIN,
      ...['--node-name', o.nodeName, '--kubeconfig', o.cp.kubeconfigPath],
      ...['--socket', o.socketPath, '--store', o.storePath, '--health-port', '0'],
      ...['--bird-config', o.birdConfigPath, '--bird-socket', o.birdSocketPath],
      // BENCH_AGENT_SPAWN=direct: the agent forks ip/nft itself (the before of docs/benchmarks/cni.md).
      ...(process.env['BENCH_AGENT_SPAWN'] ? ['--spawn', process.env['BENCH_AGENT_SPAWN']] : []),
    ]);
    const logs = await waitFor(agent, (l) => l.includes('start-up: ready'), 'the agent');
    if (agent.pid === undefined) throw new Error('the agent process has no pid');
    return { pid: agent.pid, logs, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Collect the child's output lines; resolve once one matches, reject if it exits first. */
function waitFor(child: ChildProcess, ready: (line: string) => boolean, what: string) {
  const logs: string[] = [];
  return new Promise<string[]>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} not ready after 120 s`)), 120_000);
    const collect = (chunk: Buffer) => {
      const lines = chunk.toString().split('\n').filter(Boolean);
      logs.push(...lines);
      if (lines.some(ready)) {
        clearTimeout(timer);
        resolve(logs);
      }
    };
    child.stdout!.on('data', collect);
    child.stderr!.on('data', collect);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code ?? signal}):\n${logs.slice(-20).join('\n')}`));
    });
  });
}
