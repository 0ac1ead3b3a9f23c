import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadKubeConfig } from './kubeconfig.js';

const kubeconfig = (server: string, ctx = 'c') => `apiVersion: v1
kind: Config
clusters: [{name: k, cluster: {server: "${server}"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: ${ctx}, context: {cluster: k, user: u}}]
current-context: ${ctx}
`;

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'flock-kubeconfig-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('loadKubeConfig', () => {
  it('loads an explicit file first, then $KUBECONFIG', () => {
    writeFileSync(join(dir, 'a'), kubeconfig('https://a.example:6443'));
    writeFileSync(join(dir, 'b'), kubeconfig('https://b.example:6443'));
    const env = { KUBECONFIG: join(dir, 'b') };
    expect(loadKubeConfig(join(dir, 'a'), { env }).getCurrentCluster()?.server).toBe(
      'https://a.example:6443',
    );
    expect(loadKubeConfig(undefined, { env }).getCurrentCluster()?.server).toBe(
      'https://b.example:6443',
    );
    expect(() => loadKubeConfig(undefined, { env: { KUBECONFIG: join(dir, 'missing') } })).toThrow(
      /no such file/,
    );
  });

  it('uses the in-cluster service account when there is no kubeconfig', () => {
    const sa = join(dir, 'var/run/secrets/kubernetes.io/serviceaccount');
    mkdirSync(sa, { recursive: true });
    writeFileSync(join(sa, 'token'), 'tok');
    writeFileSync(join(sa, 'ca.crt'), '');
    const kc = loadKubeConfig(undefined, {
      env: { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' },
      root: dir,
      home: dir,
    });
    expect(kc.getCurrentCluster()?.server).toBe('https://[fd00::1]:443');
    expect(kc.getCurrentCluster()?.caFile).toBe(join(sa, 'ca.crt'));
  });

  it('falls back to ~/.kube/config, and otherwise says where it looked', () => {
    expect(() => loadKubeConfig(undefined, { env: {}, root: dir, home: dir })).toThrow(
      /no Kubernetes credentials/,
    );
    mkdirSync(join(dir, '.kube'));
    writeFileSync(join(dir, '.kube', 'config'), kubeconfig('https://home.example'));
    expect(
      loadKubeConfig(undefined, { env: {}, root: dir, home: dir }).getCurrentCluster()?.server,
    ).toBe('https://home.example');
  });
});
