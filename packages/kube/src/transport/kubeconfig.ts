// Where a process finds its API server credentials: an explicit file, else $KUBECONFIG, else
// the in-cluster service account, else ~/.kube/config. Never an unauthenticated
// http://localhost:8080 fallback (client-node's loadFromDefault has one). Yields plain
// KubeCredentials; HttpTransport reads the files they name.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { isIPv6 } from 'node:net';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import type { KubeCredentials, PemSource } from './credentials.js';
import { readKubeconfigFile, refusal, type KubeconfigFile } from './kubeconfig-file.js';
import { proxyRefusal } from './proxy-env.js';

const SA_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
const SA_TOKEN = `${SA_DIR}/token`;

interface LoadKubeConfigOptions {
  /** Environment to read KUBECONFIG and KUBERNETES_SERVICE_HOST/PORT from (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Prefix of the service account path (tests). */
  root?: string;
  /** Home directory (tests). */
  home?: string;
}

/**
 * Load credentials; throws with the places it looked when there are none, and when the
 * environment asks for a proxy to the server (HTTPS_PROXY, …: see proxy-env.ts).
 */
export function loadKubeConfig(
  path?: string,
  options: LoadKubeConfigOptions = {},
): KubeCredentials {
  const env = options.env ?? process.env;
  const credentials = resolveCredentials(path, options, env);
  const proxy = proxyRefusal(credentials.server, env);
  if (proxy) throw new Error(`${credentials.source ?? 'credentials'}: ${proxy}`);
  return credentials;
}

function resolveCredentials(
  path: string | undefined,
  options: LoadKubeConfigOptions,
  env: NodeJS.ProcessEnv,
): KubeCredentials {
  const root = options.root ?? '';
  const host = env['KUBERNETES_SERVICE_HOST'];
  if (path) return fromFiles([path], path);
  if (env['KUBECONFIG']) {
    // Several files separated by ':' are merged; the first one's current context wins.
    const files = env['KUBECONFIG'].split(':').filter((f) => f && existsSync(f));
    if (!files.length) throw new Error(`KUBECONFIG=${env['KUBECONFIG']}: no such file`);
    return fromFiles(files, env['KUBECONFIG']);
  }
  if (host && existsSync(`${root}${SA_TOKEN}`)) {
    // The token file is re-read by the transport: bound service account tokens rotate.
    const port = env['KUBERNETES_SERVICE_PORT'] ?? '443';
    return {
      server: `https://${isIPv6(host) ? `[${host}]` : host}:${port}`,
      ca: { file: `${root}${SA_DIR}/ca.crt` },
      tokenFile: `${root}${SA_TOKEN}`,
      source: 'the in-cluster service account',
    };
  }
  const file = join(options.home ?? homedir(), '.kube', 'config');
  if (!existsSync(file)) {
    throw new Error(
      `no Kubernetes credentials: pass a kubeconfig path, set KUBECONFIG, run in a pod with a service account, or create ${file}`,
    );
  }
  return fromFiles([file], file);
}

/** Merge like kubectl: the first file that defines a name wins, and so does its current context. */
function merge(files: KubeconfigFile[]): KubeconfigFile {
  const [first, ...rest] = files as [KubeconfigFile, ...KubeconfigFile[]];
  const out: KubeconfigFile = {
    path: first.path,
    clusters: new Map(first.clusters),
    users: new Map(first.users),
    contexts: new Map(first.contexts),
    currentContext: first.currentContext,
  };
  for (const f of rest) {
    for (const [name, c] of f.clusters) if (!out.clusters.has(name)) out.clusters.set(name, c);
    for (const [name, u] of f.users) if (!out.users.has(name)) out.users.set(name, u);
    for (const [name, c] of f.contexts) if (!out.contexts.has(name)) out.contexts.set(name, c);
    out.currentContext ??= f.currentContext;
  }
  return out;
}

function fromFiles(paths: string[], source: string): KubeCredentials {
  const kc = merge(paths.map(readKubeconfigFile));
  const noServer = new Error(`kubeconfig from ${source} has no current cluster with a server`);
  const context = kc.currentContext ? kc.contexts.get(kc.currentContext) : undefined;
  const cluster = context && kc.clusters.get(context.entry.cluster);
  if (!context || !cluster?.entry.server) throw noServer;
  const c = cluster.entry;
  const at = (what: string) => `kubeconfig from ${source}: ${what}`;
  if (c['proxy-url'])
    throw new Error(at(`cluster ${context.entry.cluster}: proxy-url is not supported`));
  const creds: KubeCredentials = { server: c.server, source };
  const clusterFile = (p: string) => resolve(dirname(cluster.file), p);
  const ca = pem(c['certificate-authority-data'], c['certificate-authority'], clusterFile);
  if (ca) creds.ca = ca;
  if (c['insecure-skip-tls-verify']) creds.insecureSkipTlsVerify = true;
  if (c['tls-server-name']) creds.tlsServerName = c['tls-server-name'];

  const userName = context.entry.user;
  if (!userName) return creds;
  const user = kc.users.get(userName);
  if (!user)
    throw new Error(
      at(`context ${kc.currentContext} names user ${userName}, which is not defined`),
    );
  const u = user.entry;
  const why = refusal(u);
  if (why) throw new Error(at(`user ${userName}: ${why}`));
  const userFile = (p: string) => resolve(dirname(user.file), p);
  const cert = pem(u['client-certificate-data'], u['client-certificate'], userFile);
  const key = pem(u['client-key-data'], u['client-key'], userFile);
  if (!cert !== !key) {
    throw new Error(at(`user ${userName}: a client certificate needs both certificate and key`));
  }
  if (cert && key) Object.assign(creds, { clientCert: cert, clientKey: key });
  if (u.token) creds.token = u.token;
  else if (u.tokenFile) creds.tokenFile = userFile(u.tokenFile);
  if (u.exec) {
    const command = u.exec.command;
    // As kubectl: a relative path (not a bare name looked up on PATH) is relative to the file.
    const resolved = command.includes('/') && !isAbsolute(command) ? userFile(command) : command;
    creds.exec = { ...u.exec, command: resolved };
  }
  return creds;
}

/** Inline base64 data wins over a file, as in kubectl. */
function pem(
  data: string | null | undefined,
  file: string | null | undefined,
  resolveFile: (p: string) => string,
): PemSource | undefined {
  if (data) return { pem: Buffer.from(data, 'base64').toString('utf8') };
  if (file) return { file: resolveFile(file) };
  return undefined;
}
