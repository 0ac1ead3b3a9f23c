// The test control plane's credentials as plain data for @flock/kube's HttpTransport.
// testkit cannot import @flock/kube (kube's own cluster tests depend on testkit), so this is
// the part of kube's KubeCredentials that the control plane uses; kube.cluster.test.ts checks
// that it stays assignable to KubeCredentials. client-node parses the kubeconfig files here:
// testkit only runs in tests, where its memory does not matter.
import type { KubeConfig } from '@kubernetes/client-node';

export interface ClusterCredentials {
  server: string;
  ca?: { pem: string };
  clientCert?: { pem: string };
  clientKey?: { pem: string };
  token?: string;
  source?: string;
}

const decode = (b64: string) => ({ pem: Buffer.from(b64, 'base64').toString('utf8') });

/** The current context of a client-node KubeConfig (embedded data or a token) as plain data. */
export function credentialsOf(kc: KubeConfig, source: string): ClusterCredentials {
  const cluster = kc.getCurrentCluster();
  const user = kc.getCurrentUser();
  if (!cluster) throw new Error(`${source}: no current cluster`);
  if (cluster.caFile || user?.certFile || user?.keyFile) {
    throw new Error(`${source}: expected embedded certificates, not files`);
  }
  const out: ClusterCredentials = { server: cluster.server, source };
  if (cluster.caData) out.ca = decode(cluster.caData);
  if (user?.certData) out.clientCert = decode(user.certData);
  if (user?.keyData) out.clientKey = decode(user.keyData);
  if (user?.token) out.token = user.token;
  return out;
}
