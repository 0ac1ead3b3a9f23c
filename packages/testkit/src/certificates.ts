// Throwaway certificates for tests and benches, made with openssl (argument arrays, no shell) in
// a directory the caller owns: a CA, and keys with certificates it signs. EC P-256 keys, valid a
// day or two; never for anything but a test's own servers.
import { join } from 'node:path';
import { run } from '@flock/exec';

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

export interface CertificateFiles {
  cert: string;
  key: string;
}

export interface CertificateOptions {
  /** The subject, e.g. `/CN=alice` or `/O=developers/CN=alice`. */
  subject: string;
  /** subjectAltName, e.g. `DNS:api.internal,IP:127.0.0.1`. */
  san?: string;
  days?: number;
}

const files = (dir: string, name: string): CertificateFiles => ({
  cert: join(dir, `${name}.crt`),
  key: join(dir, `${name}.key`),
});

const sanArgs = (san: string | undefined) => (san ? ['-addext', `subjectAltName=${san}`] : []);

/** A self-signed certificate `NAME.crt` and its key `NAME.key` in `dir` (a CA for `issue`). */
export async function selfSignedCertificate(
  dir: string,
  name: string,
  o: CertificateOptions,
): Promise<CertificateFiles> {
  const out = files(dir, name);
  await run('openssl', [
    ...['req', '-x509', ...EC_KEY, '-keyout', out.key, '-out', out.cert],
    ...['-days', String(o.days ?? 1), '-subj', o.subject, ...sanArgs(o.san)],
  ]);
  return out;
}

/** `NAME.crt` and `NAME.key` in `dir`, signed by `ca` (its extensions, the SAN among them, kept). */
export async function issueCertificate(
  dir: string,
  name: string,
  ca: CertificateFiles,
  o: CertificateOptions,
): Promise<CertificateFiles> {
  const out = files(dir, name);
  const csr = join(dir, `${name}.csr`);
  await run('openssl', [
    ...['req', ...EC_KEY, '-keyout', out.key, '-out', csr, '-subj', o.subject],
    ...sanArgs(o.san),
  ]);
  await run('openssl', [
    ...['x509', '-req', '-in', csr, '-CA', ca.cert, '-CAkey', ca.key, '-CAcreateserial'],
    ...['-days', String(o.days ?? 1), '-copy_extensions', 'copy', '-out', out.cert],
  ]);
  return out;
}
