// Where a process finds its API server credentials: an explicit file, else $KUBECONFIG, else
// the in-cluster service account, else ~/.kube/config. Unlike client-node's loadFromDefault,
// this never falls back to an unauthenticated http://localhost:8080.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { isIPv6 } from 'node:net';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';

const SA_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export interface LoadKubeConfigOptions {
  /** Environment to read KUBECONFIG and KUBERNETES_SERVICE_HOST/PORT from (default process.env). */
  env?: NodeJS.ProcessEnv;
  /** Prefix of the service account path (tests). */
  root?: string;
  /** Home directory (tests). */
  home?: string;
}

/** Load credentials; throws with the places it looked when there are none. */
export function loadKubeConfig(path?: string, options: LoadKubeConfigOptions = {}): KubeConfig {
  const env = options.env ?? process.env;
  const root = options.root ?? '';
  const kc = new KubeConfig();
  let source: string;
  const host = env['KUBERNETES_SERVICE_HOST'];
  if (path) {
    kc.loadFromFile(path);
    source = path;
  } else if (env['KUBECONFIG']) {
    // Several files separated by ':' are merged; the first one's current context wins.
    const files = env['KUBECONFIG'].split(':').filter((f) => f && existsSync(f));
    if (!files.length) throw new Error(`KUBECONFIG=${env['KUBECONFIG']}: no such file`);
    kc.loadFromFile(files[0] as string);
    for (const more of files.slice(1)) {
      const other = new KubeConfig();
      other.loadFromFile(more);
      kc.mergeConfig(other, true);
    }
    source = env['KUBECONFIG'];
  } else if (host && existsSync(`${root}${SA_TOKEN}`)) {
    // client-node re-reads the token file, so rotated (bound) service account tokens keep working.
    kc.loadFromCluster(root);
    const port = env['KUBERNETES_SERVICE_PORT'] ?? '443';
    const server = `https://${isIPv6(host) ? `[${host}]` : host}:${port}`;
    kc.clusters = kc.clusters.map((c) => ({ ...c, server }));
    source = 'the in-cluster service account';
  } else {
    const file = join(options.home ?? homedir(), '.kube', 'config');
    if (!existsSync(file)) {
      throw new Error(
        `no Kubernetes credentials: pass a kubeconfig path, set KUBECONFIG, run in a pod with a service account, or create ${file}`,
      );
    }
    kc.loadFromFile(file);
    source = file;
  }
  if (!kc.getCurrentCluster()?.server) {
    throw new Error(`kubeconfig from ${source} has no current cluster with a server`);
  }
  return kc;
}
