// The TLS side of KubeCredentials as node:tls options, read from their files each time a
// connection pool is built (so a rotated CA or client certificate is picked up).
import { readFileSync } from 'node:fs';
import type { KubeCredentials, PemSource } from './credentials.js';

export function pemText(source: PemSource): string {
  return 'pem' in source ? source.pem : readFileSync(source.file, 'utf8');
}

export interface TlsOptions {
  ca?: string;
  cert?: string;
  key?: string;
  rejectUnauthorized: boolean;
  servername?: string;
}

/** TLS options for a new pool; `identity` (from an exec plugin) replaces the configured certificate. */
export function tlsOptions(
  credentials: KubeCredentials,
  identity?: { cert: string; key: string },
): TlsOptions {
  const out: TlsOptions = { rejectUnauthorized: !credentials.insecureSkipTlsVerify };
  if (credentials.ca) out.ca = pemText(credentials.ca);
  if (credentials.tlsServerName) out.servername = credentials.tlsServerName;
  if (identity) {
    out.cert = identity.cert;
    out.key = identity.key;
  } else if (credentials.clientCert && credentials.clientKey) {
    out.cert = pemText(credentials.clientCert);
    out.key = pemText(credentials.clientKey);
  }
  return out;
}
