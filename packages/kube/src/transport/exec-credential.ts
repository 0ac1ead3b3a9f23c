// Exec credential plugins (client.authentication.k8s.io v1/v1beta1), as kubectl runs them:
// the command with its argument array (no shell) and extra env, KUBERNETES_EXEC_INFO set, the
// ExecCredential on stdout validated; the answer is cached until its expirationTimestamp (or
// until the server refuses it: invalidate()). A plugin that fails is not run again for every
// request: until its backoff (1 s, doubling to 60 s) has passed, requests fail at once with its
// last error; a success resets it.
import { run } from '@flock/exec';
import { z } from 'zod';
import { Backoff } from '../core/backoff.js';
import type { ExecConfig, KubeCredentials } from './credentials.js';
import { pemText } from './tls-material.js';

const ExecCredentialSchema = z.object({
  apiVersion: z.string(),
  kind: z.literal('ExecCredential'),
  status: z
    .object({
      token: z.string().min(1).nullish(),
      clientCertificateData: z.string().min(1).nullish(),
      clientKeyData: z.string().min(1).nullish(),
      expirationTimestamp: z.iso.datetime({ offset: true }).nullish(),
    })
    .refine((s) => !!s.token || (!!s.clientCertificateData && !!s.clientKeyData), {
      message: 'needs a token or both clientCertificateData and clientKeyData',
    }),
});

interface ExecResult {
  token?: string;
  /** PEM client certificate and key, when the plugin hands out a certificate. */
  cert?: string;
  key?: string;
}

/** How long a failed plugin is left alone before it runs again. */
const EXEC_FAILURE_BACKOFF = { baseMs: 1000, maxMs: 60_000 } as const;

export class ExecCredentialSource {
  private cached: { result: ExecResult; expiresAt: number } | undefined;
  private running: Promise<ExecResult> | undefined;
  private failed: { error: Error; retryAt: number } | undefined;
  private readonly backoff = new Backoff(EXEC_FAILURE_BACKOFF);

  constructor(
    private readonly exec: ExecConfig,
    private readonly credentials: KubeCredentials,
    private readonly now: () => number = Date.now,
  ) {}

  /** The plugin's current answer; runs it when there is none or it expired. */
  async get(): Promise<ExecResult> {
    if (this.cached && this.now() < this.cached.expiresAt) return this.cached.result;
    if (this.failed && this.now() < this.failed.retryAt) {
      const s = Math.ceil((this.failed.retryAt - this.now()) / 1000);
      throw new Error(`${this.failed.error.message} (run again in ${s} s)`, {
        cause: this.failed.error,
      });
    }
    // Concurrent requests share one run of the plugin.
    this.running ??= this.runPlugin().then(
      (result) => {
        this.running = undefined;
        this.failed = undefined;
        this.backoff.reset();
        return result;
      },
      (error: unknown) => {
        this.running = undefined;
        this.failed = { error: error as Error, retryAt: this.now() + this.backoff.next() };
        throw error;
      },
    );
    return this.running;
  }

  /** The server refused the credential: run the plugin again next time. */
  invalidate(): void {
    this.cached = undefined;
  }

  private async runPlugin(): Promise<ExecResult> {
    const { apiVersion, command, args, env, installHint } = this.exec;
    const info = {
      apiVersion,
      kind: 'ExecCredential',
      spec: { interactive: false, ...this.cluster() },
    };
    const extra: NodeJS.ProcessEnv = { KUBERNETES_EXEC_INFO: JSON.stringify(info) };
    for (const e of env ?? []) extra[e.name] = e.value;
    const out = await run(command, args ?? [], { env: extra, timeoutMs: 60_000 }).catch(
      (e: unknown) => {
        const hint = installHint ? ` (${installHint.trim()})` : '';
        throw new Error(`exec credential plugin ${command}${hint}: ${(e as Error).message}`, {
          cause: e,
        });
      },
    );
    let doc: unknown;
    try {
      doc = JSON.parse(out.stdout);
    } catch {
      throw new Error(`exec credential plugin ${command}: the output is not JSON`);
    }
    const parsed = ExecCredentialSchema.safeParse(doc);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new Error(
        `exec credential plugin ${command}: invalid ExecCredential: ${issue?.path.join('.') || 'status'}: ${issue?.message}`,
      );
    }
    if (parsed.data.apiVersion !== apiVersion) {
      throw new Error(
        `exec credential plugin ${command}: answered ${parsed.data.apiVersion}, asked for ${apiVersion}`,
      );
    }
    const s = parsed.data.status;
    const result: ExecResult = {};
    if (s.token) result.token = s.token;
    if (s.clientCertificateData && s.clientKeyData) {
      result.cert = s.clientCertificateData;
      result.key = s.clientKeyData;
    }
    const expiresAt = s.expirationTimestamp ? Date.parse(s.expirationTimestamp) : Infinity;
    this.cached = { result, expiresAt };
    return result;
  }

  /** spec.cluster, for plugins that ask for it (provideClusterInfo). */
  private cluster(): { cluster?: Record<string, unknown> } {
    if (!this.exec.provideClusterInfo) return {};
    const c = this.credentials;
    const ca = c.ca ? pemText(c.ca) : undefined;
    return {
      cluster: {
        server: c.server,
        ...(c.tlsServerName ? { tlsServerName: c.tlsServerName } : {}),
        ...(c.insecureSkipTlsVerify ? { insecureSkipTLSVerify: true } : {}),
        ...(ca ? { certificateAuthorityData: Buffer.from(ca).toString('base64') } : {}),
      },
    };
  }
}
