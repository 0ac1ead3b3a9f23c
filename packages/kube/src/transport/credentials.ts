// What HttpTransport needs to reach and authenticate to one API server: plain data, resolved
// from a kubeconfig's current context (or the in-cluster service account) by loadKubeConfig.
// Files are named, not read: the transport reads them when it builds a connection pool (so
// rotated certificates and CAs are picked up) and re-reads token files (bound service account
// tokens rotate).
import { z } from 'zod';

/** PEM material, either in a file or inline (kubeconfig `*-data` fields, already decoded). */
export type PemSource = { file: string } | { pem: string };

/** An exec credential plugin (client.authentication.k8s.io v1 or v1beta1). */
export const ExecConfigSchema = z.object({
  apiVersion: z.enum(['client.authentication.k8s.io/v1', 'client.authentication.k8s.io/v1beta1']),
  /** Program to run (a relative path with a '/' is resolved against the kubeconfig's directory). */
  command: z.string().min(1),
  args: z.array(z.string()).nullish(),
  env: z.array(z.object({ name: z.string().min(1), value: z.string() })).nullish(),
  installHint: z.string().nullish(),
  provideClusterInfo: z.boolean().nullish(),
  interactiveMode: z.enum(['Never', 'IfAvailable', 'Always']).nullish(),
});
export type ExecConfig = z.infer<typeof ExecConfigSchema>;

export interface KubeCredentials {
  /** https://host:port (http:// only for local test servers). */
  server: string;
  /** CA bundle to trust; absent: Node's default CAs. */
  ca?: PemSource;
  insecureSkipTlsVerify?: boolean;
  /** Name to verify the server certificate against (and send as SNI) instead of the host. */
  tlsServerName?: string;
  /** Client certificate authentication (both or neither). */
  clientCert?: PemSource;
  clientKey?: PemSource;
  /** A bearer token. */
  token?: string;
  /** A file holding the bearer token, re-read when older than a minute. */
  tokenFile?: string;
  /** Run a plugin for a token or a client certificate. */
  exec?: ExecConfig;
  /** Where these came from, for messages (a file, "the in-cluster service account"). */
  source?: string;
}
