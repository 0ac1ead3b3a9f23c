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

const b64 = (s: string) => Buffer.from(s).toString('base64');

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'flock-kubeconfig-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const write = (name: string, text: string) => {
  const path = join(dir, name);
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, text);
  return path;
};
const noHome = () => ({ env: {}, root: dir, home: join(dir, 'nohome') });

describe('loadKubeConfig', () => {
  it('loads an explicit file first, then $KUBECONFIG', () => {
    const a = write('a', kubeconfig('https://a.example:6443'));
    const b = write('b', kubeconfig('https://b.example:6443'));
    const env = { KUBECONFIG: b };
    expect(loadKubeConfig(a, { env })).toEqual({
      server: 'https://a.example:6443',
      token: 't',
      source: a,
    });
    expect(loadKubeConfig(undefined, { env }).server).toBe('https://b.example:6443');
    expect(() => loadKubeConfig(undefined, { env: { KUBECONFIG: join(dir, 'missing') } })).toThrow(
      /no such file/,
    );
  });

  it('merges $KUBECONFIG files like kubectl: the first definition of a name wins', () => {
    const first = write(
      'first',
      `clusters: [{name: k, cluster: {server: "https://first"}}]
users: [{name: u, user: {client-certificate: certs/u.crt, client-key: certs/u.key}}]
`,
    );
    const second = write(
      'other/second',
      `clusters:
- {name: k, cluster: {server: "https://second"}}
- {name: k2, cluster: {server: "https://k2", certificate-authority: ca.crt}}
users: [{name: u, user: {token: ignored}}]
contexts:
- {name: c1, context: {cluster: k, user: u}}
- {name: c2, context: {cluster: k2, user: u}}
current-context: c1
`,
    );
    const third = write('third', 'current-context: c2\n');
    const env = { KUBECONFIG: [join(dir, 'absent'), first, second, third].join(':') };
    // current-context: the first file that sets one (second), cluster k from the first file;
    // relative paths resolve against the file that defined the entry.
    expect(loadKubeConfig(undefined, { env })).toEqual({
      server: 'https://first',
      clientCert: { file: join(dir, 'certs/u.crt') },
      clientKey: { file: join(dir, 'certs/u.key') },
      source: env.KUBECONFIG,
    });
    const env2 = { KUBECONFIG: `${third}:${second}` };
    expect(loadKubeConfig(undefined, { env: env2 })).toMatchObject({
      server: 'https://k2',
      ca: { file: join(dir, 'other/ca.crt') },
      token: 'ignored',
    });
  });

  it('reads every supported cluster and user field', () => {
    const path = write(
      'full',
      `clusters:
- name: k
  cluster:
    server: https://10.0.0.1:6443
    certificate-authority-data: ${b64('CA PEM')}
    certificate-authority: /ignored/when/data/is/given
    insecure-skip-tls-verify: true
    tls-server-name: api.internal
users:
- name: u
  user:
    client-certificate-data: ${b64('CERT PEM')}
    client-key-data: ${b64('KEY PEM')}
    tokenFile: tok
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./bin/plugin
      args: [--flag, "two words"]
      env: [{name: A, value: b}]
      interactiveMode: Never
- name: other
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: aws}
contexts:
- {name: c, context: {cluster: k, user: u, namespace: ns}}
- {name: o, context: {cluster: k, user: other}}
- {name: anonymous, context: {cluster: k}}
current-context: c
`,
    );
    expect(loadKubeConfig(path)).toEqual({
      server: 'https://10.0.0.1:6443',
      ca: { pem: 'CA PEM' },
      insecureSkipTlsVerify: true,
      tlsServerName: 'api.internal',
      clientCert: { pem: 'CERT PEM' },
      clientKey: { pem: 'KEY PEM' },
      tokenFile: join(dir, 'tok'),
      exec: {
        apiVersion: 'client.authentication.k8s.io/v1',
        command: join(dir, 'bin/plugin'),
        args: ['--flag', 'two words'],
        env: [{ name: 'A', value: 'b' }],
        interactiveMode: 'Never',
      },
      source: path,
    });
    const other = write('o', `current-context: o\n`);
    // A bare command name is looked up on PATH, not next to the file.
    expect(
      loadKubeConfig(undefined, { env: { KUBECONFIG: `${other}:${path}` } }).exec?.command,
    ).toBe('aws');
    const anon = write('anon', `current-context: anonymous\n`);
    expect(loadKubeConfig(undefined, { env: { KUBECONFIG: `${anon}:${path}` } })).toEqual({
      server: 'https://10.0.0.1:6443',
      ca: { pem: 'CA PEM' },
      insecureSkipTlsVerify: true,
      tlsServerName: 'api.internal',
      source: `${anon}:${path}`,
    });
  });

  it('refuses what it cannot honour instead of sending no credentials', () => {
    const user = (u: string) =>
      write(
        'refused',
        `clusters: [{name: k, cluster: {server: "https://k"}}]
users: [{name: u, user: ${u}}]
contexts: [{name: c, context: {cluster: k, user: u}}]
current-context: c
`,
      );
    expect(() => loadKubeConfig(user('{auth-provider: {name: gcp}}'))).toThrow(
      /user u: auth-provider is not supported/,
    );
    expect(() => loadKubeConfig(user('{username: a, password: b}'))).toThrow(
      /username\/password \(basic auth\) is not supported/,
    );
    expect(() => loadKubeConfig(user('{token: t, as: admin}'))).toThrow(/impersonation/);
    expect(() => loadKubeConfig(user('{client-certificate: c.crt}'))).toThrow(
      /needs both certificate and key/,
    );
    const proxied = write(
      'proxied',
      `clusters: [{name: k, cluster: {server: "https://k", proxy-url: "http://proxy:3128"}}]
contexts: [{name: c, context: {cluster: k}}]
current-context: c
`,
    );
    expect(() => loadKubeConfig(proxied)).toThrow(/cluster k: proxy-url is not supported/);
  });

  it('names the file and the field of an invalid kubeconfig', () => {
    const bad = write('bad', `clusters: [{name: k, cluster: {server: 42}}]\n`);
    expect(() => loadKubeConfig(bad)).toThrow(`kubeconfig ${bad}: clusters.0.cluster.server:`);
    const exec = write(
      'exec',
      `users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1alpha1, command: x}}}]\n`,
    );
    expect(() => loadKubeConfig(exec)).toThrow(`kubeconfig ${exec}: users.0.user.exec.apiVersion:`);
    const yaml = write('yaml', 'clusters: [\n');
    expect(() => loadKubeConfig(yaml)).toThrow(`kubeconfig ${yaml}:`);
    const noServer = write(
      'noserver',
      kubeconfig('https://x').replace('current-context: c', 'current-context: other'),
    );
    expect(() => loadKubeConfig(noServer)).toThrow(
      `kubeconfig from ${noServer} has no current cluster with a server`,
    );
    const noUser = write(
      'nouser',
      kubeconfig('https://x').replace('users: [{name: u, user: {token: t}}]', ''),
    );
    expect(() => loadKubeConfig(noUser)).toThrow(/names user u, which is not defined/);
  });

  it('uses the in-cluster service account when there is no kubeconfig', () => {
    const sa = join(dir, 'var/run/secrets/kubernetes.io/serviceaccount');
    mkdirSync(sa, { recursive: true });
    writeFileSync(join(sa, 'token'), 'tok');
    writeFileSync(join(sa, 'ca.crt'), '');
    const creds = loadKubeConfig(undefined, {
      env: { KUBERNETES_SERVICE_HOST: 'fd00::1', KUBERNETES_SERVICE_PORT: '443' },
      root: dir,
      home: dir,
    });
    expect(creds).toEqual({
      server: 'https://[fd00::1]:443',
      ca: { file: join(sa, 'ca.crt') },
      tokenFile: join(sa, 'token'), // re-read by the transport: bound tokens rotate
      source: 'the in-cluster service account',
    });
    expect(
      loadKubeConfig(undefined, { env: { KUBERNETES_SERVICE_HOST: '10.96.0.1' }, root: dir })
        .server,
    ).toBe('https://10.96.0.1:443');
  });

  it('falls back to ~/.kube/config, and otherwise says where it looked', () => {
    expect(() => loadKubeConfig(undefined, noHome())).toThrow(/no Kubernetes credentials/);
    // KUBERNETES_SERVICE_HOST without a token file is not in-cluster: never unauthenticated.
    expect(() =>
      loadKubeConfig(undefined, { ...noHome(), env: { KUBERNETES_SERVICE_HOST: '10.96.0.1' } }),
    ).toThrow(/no Kubernetes credentials/);
    write('.kube/config', kubeconfig('https://home.example'));
    expect(loadKubeConfig(undefined, { env: {}, root: dir, home: dir }).server).toBe(
      'https://home.example',
    );
  });
});
