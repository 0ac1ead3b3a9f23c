// Per-request authentication from KubeCredentials: a static token, a token file re-read when
// older than a minute (bound service account tokens rotate; client-go re-reads on the same
// period), or an exec plugin's answer (cached until it expires). After a 401, refresh() drops
// what was cached so that one retry goes out with a fresh credential.
import { readFile } from 'node:fs/promises';
import type { KubeCredentials } from './credentials.js';
import { ExecCredentialSource } from './exec-credential.js';

export const TOKEN_FILE_MAX_AGE_MS = 60_000;

interface RequestAuth {
  /** The Authorization header value, if any. */
  authorization?: string;
  /** A client certificate handed out by an exec plugin (the pool must present it). */
  identity?: { cert: string; key: string };
}

export class Authenticator {
  private readonly exec: ExecCredentialSource | undefined;
  private fileToken: { token: string; readAt: number } | undefined;

  constructor(
    private readonly credentials: KubeCredentials,
    private readonly now: () => number = Date.now,
  ) {
    this.exec = credentials.exec
      ? new ExecCredentialSource(credentials.exec, credentials, now)
      : undefined;
  }

  async current(): Promise<RequestAuth> {
    const out: RequestAuth = {};
    const token = this.credentials.token ?? (await this.tokenFromFile());
    if (token) out.authorization = `Bearer ${token}`;
    if (this.exec) {
      const answer = await this.exec.get();
      if (answer.token) out.authorization = `Bearer ${answer.token}`;
      if (answer.cert && answer.key) out.identity = { cert: answer.cert, key: answer.key };
    }
    return out;
  }

  /** The server answered 401: whether a fresh credential may help (then retry once). */
  refresh(): boolean {
    if (this.exec) {
      this.exec.invalidate();
      return true;
    }
    if (this.credentials.tokenFile && !this.credentials.token) {
      this.fileToken = undefined;
      return true;
    }
    return false;
  }

  private async tokenFromFile(): Promise<string | undefined> {
    const file = this.credentials.tokenFile;
    if (!file) return undefined;
    const now = this.now();
    if (this.fileToken && now - this.fileToken.readAt < TOKEN_FILE_MAX_AGE_MS) {
      return this.fileToken.token;
    }
    const token = (await readFile(file, 'utf8')).trim();
    if (!token) throw new Error(`token file ${file} is empty`);
    this.fileToken = { token, readAt: now };
    return token;
  }
}
