// The environment's proxy variables: refused loudly (the transport cannot use a proxy) unless
// they would not apply to the API server, as Go's http.ProxyFromEnvironment decides.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadKubeConfig } from './kubeconfig.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'flock-proxy-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** loadKubeConfig for a kubeconfig naming `server`, in environment `env`. */
function load(server: string, env: NodeJS.ProcessEnv) {
  const path = join(dir, 'config');
  writeFileSync(
    path,
    `clusters: [{name: k, cluster: {server: "${server}"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
current-context: c
`,
  );
  return () => loadKubeConfig(path, { env });
}

describe('proxy variables', () => {
  it('refuses HTTPS_PROXY (or https_proxy) for an https server, naming the variable and not its value', () => {
    const proxy = 'http://user:secret@proxy.corp:3128';
    expect(load('https://api.example:6443', { HTTPS_PROXY: proxy })).toThrow(
      /config: HTTPS_PROXY is set, but this client connects to the API server directly and does not support proxies: unset HTTPS_PROXY for this process, or add api\.example to NO_PROXY/,
    );
    expect(load('https://api.example:6443', { https_proxy: proxy })).toThrow(/https_proxy is set/);
    expect(load('http://api.example:8080', { HTTP_PROXY: proxy })).toThrow(/HTTP_PROXY is set/);
    expect(load('https://api.example', { HTTPS_PROXY: proxy })).not.toThrow(/secret/);
  });

  it('in a pod: the in-cluster server is refused too', () => {
    const root = join(dir, 'root');
    const sa = join(root, 'var/run/secrets/kubernetes.io/serviceaccount');
    mkdirSync(sa, { recursive: true });
    writeFileSync(join(sa, 'token'), 't');
    const env = { KUBERNETES_SERVICE_HOST: '10.96.0.1', HTTPS_PROXY: 'http://proxy:3128' };
    expect(() => loadKubeConfig(undefined, { env, root })).toThrow(
      /the in-cluster service account: HTTPS_PROXY is set.*add 10\.96\.0\.1 to NO_PROXY/,
    );
    expect(
      loadKubeConfig(undefined, { env: { ...env, NO_PROXY: '10.96.0.0/12' }, root }).server,
    ).toBe('https://10.96.0.1:443');
  });

  it('does not apply to what Go would not proxy: the other scheme, loopback, and what NO_PROXY exempts', () => {
    const proxy = 'http://proxy:3128';
    const ok = (server: string, env: NodeJS.ProcessEnv) => expect(load(server, env)).not.toThrow();
    ok('https://api.example:6443', { HTTP_PROXY: proxy });
    ok('https://api.example:6443', { HTTPS_PROXY: '' });
    ok('https://127.0.0.1:6443', { HTTPS_PROXY: proxy });
    ok('https://[::1]:6443', { HTTPS_PROXY: proxy });
    ok('https://localhost:6443', { HTTPS_PROXY: proxy });
    for (const noProxy of [
      '*',
      'api.example',
      'example',
      '.example',
      '*.example',
      'other, API.example:6443',
      '10.0.0.0/8',
    ])
      ok(noProxy.includes('10.') ? 'https://10.1.2.3:6443' : 'https://api.example:6443', {
        HTTPS_PROXY: proxy,
        NO_PROXY: noProxy,
      });
    ok('https://[2001:db8::1]:6443', { HTTPS_PROXY: proxy, no_proxy: '2001:db8:0::1' });
    ok('https://[2001:db8::1]:6443', { HTTPS_PROXY: proxy, NO_PROXY: '[2001:db8::1]:6443' });
    ok('https://[2001:db8::1]:6443', { HTTPS_PROXY: proxy, NO_PROXY: '2001:db8::/32' });
    const refused = (server: string, noProxy: string) =>
      expect(load(server, { HTTPS_PROXY: proxy, NO_PROXY: noProxy })).toThrow(/HTTPS_PROXY is set/);
    refused('https://api.example:6443', 'api.example:443'); // another port
    refused('https://example:6443', '.example'); // subdomains only
    refused('https://notexample:6443', 'example');
    refused('https://10.1.2.3:6443', '10.1.2.4, 192.168.0.0/16');
  });
});
