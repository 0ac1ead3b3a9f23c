// Start the real test control plane (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler: e2e/controlplane, built by scripts/build-controlplane.sh) in a temp dir on
// free ports, and hand back credentials. `stop()` leaves no process and no directory behind.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { run } from '@flock/exec';
import { z } from 'zod';
import { credentialsOf, type ClusterCredentials } from './credentials.js';
import { requireTools, which } from './preflight.js';
import { startUnixBridge, type UnixBridge } from './unix-bridge.js';

export type Component = 'etcd' | 'apiserver' | 'controller-manager' | 'scheduler';

export interface ControlPlaneOptions {
  /** Components to run (default: etcd and apiserver). */
  components?: Component[];
  /** Extra upstream flags per component, e.g. { 'controller-manager': ['--node-monitor-grace-period=10s'] }. */
  extraArgs?: Partial<Record<Component, string[]>>;
  /** How long to wait for every component to be healthy (default 3 minutes). */
  readyTimeoutMs?: number;
  /**
   * Run the control plane inside this network namespace (a path, /run/netns/NAME) instead of
   * the host's. The host reaches the API server through a unix socket that `up --unix-proxy`
   * serves and a loopback TCP port of this process that forwards to it (see unix-bridge.ts):
   * `server`, `kubeconfigPath` and the credentials name that port.
   */
  netns?: string;
  /** API server port (default: a free one; inside `netns` any port is free, e.g. 6443). */
  apiserverPort?: number;
  /** Extra names or addresses for the API server's certificate (`up --san`). */
  sans?: string[];
}

const UpState = z.object({
  server: z.string(),
  etcd: z.string(),
  pkiDir: z.string(),
  kubeconfig: z.string(),
  caFile: z.string(),
  adminCert: z.string(),
  adminKey: z.string(),
  logDir: z.string(),
  pids: z.record(z.string(), z.number()),
});
export type ControlPlaneState = z.infer<typeof UpState>;

export interface ControlPlane {
  /** https://127.0.0.1:PORT (reachable from this process's namespace). */
  server: string;
  /** Admin kubeconfig file (user flock-admin in system:masters). */
  kubeconfigPath: string;
  /** The same credentials for @flock/kube's HttpTransport. */
  kubeConfig: ClusterCredentials;
  /** And as a client-node KubeConfig, for its generated API clients (CoreV1Api, ...). */
  clientNodeConfig: KubeConfig;
  state: ControlPlaneState;
  dir: string;
  /**
   * A kubeconfig file for a user with the given groups (client certificate), naming `server`
   * (default: this process's URL; a node in another namespace passes the one it can reach).
   */
  mintUser(
    user: string,
    groups?: string[],
    server?: string,
  ): Promise<{ path: string; kubeConfig: ClusterCredentials }>;
  /** A kubeconfig file for a ServiceAccount (a TokenRequest token); creates the account if needed. */
  /**
   * A token of the ServiceAccount (created if missing); `boundPod`: bound to that pod, as the
   * kubelet's projected tokens are (they then name the pod's node).
   */
  mintServiceAccount(
    namespace: string,
    name: string,
    boundPod?: { name: string; uid: string },
  ): Promise<{ path: string; kubeConfig: ClusterCredentials; token: string }>;
  /** The running processes: `flock-controlplane up` and every component it started. */
  pids(): number[];
  /** Tail of a component's log, for failure messages. */
  log(component: Component, lines?: number): Promise<string>;
  /** The admin credentials, talking to `server` instead (e.g. a TcpProxy in front). */
  kubeConfigVia(server: string): ClusterCredentials;
  /** The same as kubeconfig YAML, for a process started with --kubeconfig. */
  kubeconfigYamlVia(server: string): string;
  /** Stop every component and start them again on the same ports with the same data. */
  restart(): Promise<void>;
  /** Stop the components and remove the directory. Safe to call twice. */
  stop(): Promise<void>;
}

const BINARY = 'flock-controlplane';

/** Start a control plane; fails loudly (with what to build) if the binary is missing. */
export async function startControlPlane(options: ControlPlaneOptions = {}): Promise<ControlPlane> {
  requireTools(BINARY);
  const components = options.components ?? ['etcd', 'apiserver'];
  if (options.netns !== undefined) requireTools('nsenter');
  const dir = await mkdtemp(join(tmpdir(), 'flock-cp-'));
  const args = ['up', '--dir', dir, '--components', components.join(','), '--etcd-unsafe-no-fsync'];
  args.push(`--ready-timeout=${Math.round((options.readyTimeoutMs ?? 180_000) / 1000)}s`);
  if (options.apiserverPort !== undefined) args.push(`--apiserver-port=${options.apiserverPort}`);
  for (const san of options.sans ?? []) args.push(`--san=${san}`);
  const unixSocket = join(dir, 'apiserver.sock');
  if (options.netns !== undefined) args.push(`--unix-proxy=${unixSocket}`);
  for (const [component, extra] of Object.entries(options.extraArgs ?? {})) {
    for (const a of extra ?? []) args.push(`--${component}-arg=${a}`);
  }
  let child: ChildProcess;
  let state: ControlPlaneState;
  let bridge: UnixBridge | undefined;
  try {
    ({ child, state } = await launch(args, options.netns));
    if (options.netns !== undefined) {
      bridge = await startUnixBridge(unixSocket);
      state = await viaBridge(state, dir, bridge.url);
    }
  } catch (e) {
    await bridge?.close();
    await rm(dir, { recursive: true, force: true });
    throw e;
  }
  const clientNodeConfig = new KubeConfig();
  clientNodeConfig.loadFromFile(state.kubeconfig);
  const kubeConfig = credentialsOf(clientNodeConfig, state.kubeconfig);
  let stopped = false;

  const cp: ControlPlane = {
    server: state.server,
    kubeconfigPath: state.kubeconfig,
    kubeConfig,
    clientNodeConfig,
    state,
    dir,
    async mintUser(user, groups = [], server = state.server) {
      const path = join(dir, `user-${user.replace(/[^a-zA-Z0-9_.-]/g, '_')}.kubeconfig`);
      await run(BINARY, [
        'mint-cert',
        '--dir',
        state.pkiDir,
        '--user',
        user,
        ...groups.flatMap((g) => ['--group', g]),
        ...['--server', server, '--out', path],
      ]);
      const kc = new KubeConfig();
      kc.loadFromFile(path);
      return { path, kubeConfig: credentialsOf(kc, path) };
    },
    async mintServiceAccount(namespace, name, boundPod) {
      const core = clientNodeConfig.makeApiClient(CoreV1Api);
      await core
        .createNamespacedServiceAccount({ namespace, body: { metadata: { name } } })
        .catch((e: unknown) => {
          if ((e as { code?: number }).code !== 409) throw e;
        });
      const tr = await core.createNamespacedServiceAccountToken({
        name,
        namespace,
        body: {
          spec: {
            audiences: [],
            expirationSeconds: 3600,
            ...(boundPod ? { boundObjectRef: { apiVersion: 'v1', kind: 'Pod', ...boundPod } } : {}),
          },
        },
      });
      const token = tr.status?.token;
      if (!token) throw new Error(`no token issued for ${namespace}/${name}`);
      const kc = new KubeConfig();
      kc.loadFromOptions({
        clusters: [{ name: 'flock-test', server: state.server, caFile: state.caFile }],
        users: [{ name: `${namespace}-${name}`, token }],
        contexts: [{ name: 'sa', cluster: 'flock-test', user: `${namespace}-${name}` }],
        currentContext: 'sa',
      });
      const path = join(
        dir,
        `sa-${namespace}-${name}${boundPod ? `-${boundPod.name}` : ''}.kubeconfig`,
      );
      await writeFile(path, kc.exportConfig(), { mode: 0o600 });
      const ca = { pem: await readFile(state.caFile, 'utf8') };
      return { path, kubeConfig: { server: state.server, ca, token, source: path }, token };
    },
    async log(component, lines = 40) {
      const text = await readFile(join(state.logDir, `${component}.log`), 'utf8').catch(() => '');
      return text.split('\n').slice(-lines).join('\n');
    },
    pids() {
      return [child.pid, ...Object.values(state.pids)].filter((p): p is number => p !== undefined);
    },
    kubeConfigVia(server) {
      return { ...kubeConfig, server };
    },
    kubeconfigYamlVia(server) {
      return clientNodeConfig.exportConfig().replace(state.server, server);
    },
    async restart() {
      await terminate(child);
      const ports = [
        `--apiserver-port=${new URL(state.server).port}`,
        `--etcd-port=${new URL(state.etcd).port}`,
      ];
      const relaunched = await launch([...args, ...ports], options.netns);
      child = relaunched.child;
      state = bridge ? await viaBridge(relaunched.state, dir, bridge.url) : relaunched.state;
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await terminate(child);
      await bridge?.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
  return cp;
}

/**
 * The state of a control plane in another namespace as this process sees it: `server` is the
 * bridge's port and `kubeconfig` a copy of the admin kubeconfig that names it.
 */
async function viaBridge(
  state: ControlPlaneState,
  dir: string,
  url: string,
): Promise<ControlPlaneState> {
  const kubeconfig = join(dir, 'admin-via-bridge.kubeconfig');
  const text = await readFile(state.kubeconfig, 'utf8');
  await writeFile(kubeconfig, text.replaceAll(state.server, url), { mode: 0o600 });
  return { ...state, server: url, kubeconfig };
}

/** Run `flock-controlplane up ...` and wait for its JSON line (everything healthy). */
async function launch(
  args: string[],
  netns?: string,
): Promise<{ child: ChildProcess; state: ControlPlaneState }> {
  const child =
    netns === undefined
      ? spawn(BINARY, args, { stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn('nsenter', [`--net=${netns}`, '--', which(BINARY) ?? BINARY, ...args], {
          stdio: ['ignore', 'pipe', 'pipe'],
        });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => {
    stderr = (stderr + c.toString()).slice(-8192);
  });
  try {
    return { child, state: await firstJsonLine(child) };
  } catch (e) {
    child.kill('SIGKILL');
    throw new Error(`the test control plane did not start: ${(e as Error).message}\n${stderr}`);
  }
}

function firstJsonLine(child: ChildProcess): Promise<ControlPlaneState> {
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    const onExit = (code: number | null) =>
      reject(new Error(`flock-controlplane up exited with ${code}`));
    child.once('exit', onExit);
    lines.once('line', (line) => {
      child.off('exit', onExit);
      try {
        resolve(UpState.parse(JSON.parse(line)));
      } catch (e) {
        reject(new Error(`unexpected output ${JSON.stringify(line)}: ${(e as Error).message}`));
      }
    });
  });
}

/** SIGTERM (up stops its children in order), then SIGKILL after 20 s. */
async function terminate(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  await exited;
  clearTimeout(timer);
}
