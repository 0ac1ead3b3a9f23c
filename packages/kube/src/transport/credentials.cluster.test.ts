// Credentials against a real kube-apiserver: the control plane's kubeconfig (CA and client
// certificate inline) read by loadKubeConfig, a ServiceAccount token from a token file and
// from an exec plugin, RBAC seeing who we are, and a refused token answered with 401.
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '@flock/testkit';
import type { KubeCredentials } from './credentials.js';
import { HttpTransport } from './http-transport.js';
import { loadKubeConfig } from './kubeconfig.js';

// testkit cannot import @flock/kube; its credentials must stay usable as KubeCredentials.
const _sameShape: (c: ControlPlane['kubeConfig']) => KubeCredentials = (c) => c;
void _sameShape;

let cp: ControlPlane;
let dir: string;
let sa: { token: string; kubeConfig: KubeCredentials };

beforeAll(async () => {
  cp = await startControlPlane();
  dir = mkdtempSync(join(tmpdir(), 'flock-creds-'));
  sa = await cp.mintServiceAccount('default', 'robot');
});
afterAll(async () => {
  await cp?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const whoami = async (creds: KubeCredentials) => {
  const review = (await new HttpTransport(creds).request({
    method: 'POST',
    path: '/apis/authentication.k8s.io/v1/selfsubjectreviews',
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
  })) as { status: { userInfo: { username: string } } };
  return review.status.userInfo.username;
};

describe('credentials on a real API server', () => {
  it("reads the control plane's kubeconfig (inline CA and client certificate)", async () => {
    const creds = loadKubeConfig(cp.kubeconfigPath);
    expect(creds.ca).toHaveProperty('pem');
    expect(creds.clientCert).toHaveProperty('pem');
    expect(await whoami(creds)).toBe(await whoami(cp.kubeConfig));
    const alice = await cp.mintUser('alice', ['developers']);
    expect(await whoami(loadKubeConfig(alice.path))).toBe('alice');
  });

  it('authenticates a ServiceAccount by token file and by exec plugin', async () => {
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, sa.token);
    const base = { server: cp.server, ca: { file: cp.state.caFile } };
    expect(await whoami({ ...base, tokenFile })).toBe('system:serviceaccount:default:robot');
    const plugin = join(dir, 'plugin.mjs');
    const answer = {
      apiVersion: 'client.authentication.k8s.io/v1beta1',
      kind: 'ExecCredential',
      status: { token: sa.token },
    };
    writeFileSync(
      plugin,
      `#!/usr/bin/env node\nprocess.stdout.write(${JSON.stringify(JSON.stringify(answer))});\n`,
    );
    chmodSync(plugin, 0o755);
    const exec = { apiVersion: 'client.authentication.k8s.io/v1beta1' as const, command: plugin };
    expect(await whoami({ ...base, exec })).toBe('system:serviceaccount:default:robot');
  });

  it('answers a wrong token with a 401 KubeApiError', async () => {
    const creds = { server: cp.server, ca: { file: cp.state.caFile }, token: 'not-a-token' };
    await expect(whoami(creds)).rejects.toMatchObject({ code: 401 });
  });
});
