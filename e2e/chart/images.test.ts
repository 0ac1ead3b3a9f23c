// The chart runs what the Dockerfiles build. No container engine here, so: the Dockerfiles'
// bases are pinned to the repo's Node release; each build stage's `assemble` step is run for
// real against the repository's build outputs, and every path the rendered chart executes or
// copies must exist in what it assembled (or in the Debian package that provides it); the
// assembled entry points start; the chart's flags parse with the programs' own option parsers.
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { AGENT_MALLOC_ENV, loadAgentConfig } from '@flock/agent';
import { run } from '@flock/exec';
import { parseOptions } from '@flock/operator';
import { parse } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  copiesFromBuild,
  entrypoint,
  finalStage,
  instructions,
  parseDockerfile,
  runAssemble,
} from './dockerfile.js';
import { CHART, container, podSpec, readRepo, render, type K8sObject } from './support.js';
import { testCode, unshippedPaths } from '../images/contents.js';

const images = {
  agent: parseDockerfile(readRepo('images', 'agent', 'Dockerfile')),
  operator: parseDockerfile(readRepo('images', 'operator', 'Dockerfile')),
};
const NODE_VERSION = /FLOCK_NODE_VERSION=(\S+)/.exec(readRepo('scripts', 'env.sh'))?.[1];
const NODE = '/usr/local/bin/node'; // where the official node images put the binary
const readPackage = (p: string) =>
  JSON.parse(readRepo('packages', p, 'package.json')) as { version: string };

let dir: string;
let objects: K8sObject[];
const assembled: Record<keyof typeof images, string> = { agent: '', operator: '' };

/** An absolute path inside an image → where the test's assembly put it (or undefined). */
function inImage(image: keyof typeof images, path: string): string | undefined {
  for (const { src, dest } of copiesFromBuild(finalStage(images[image]))) {
    if (path === dest || path.startsWith(`${dest}/`)) {
      // src is under the build stage's /out, which the test assembled into <dir>/<image>/out.
      return join(assembled[image], relative('/out', src), relative(dest, path));
    }
  }
  return undefined;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flock-images-'));
  for (const image of ['agent', 'operator'] as const)
    assembled[image] = await runAssemble(images[image], join(dir, image));
  objects = await render();
}, 120_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('Dockerfiles', () => {
  it.each(Object.entries(images))('%s: multi-stage, base pinned to the repo Node', (_, stages) => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(NODE_VERSION).toMatch(/^24\.\d+\.\d+$/);
    for (const s of stages) {
      expect(s.from).toMatch(/^node:(\d+\.\d+\.\d+)-bookworm-slim(@sha256:[a-f0-9]{64})?$/);
      expect(s.from.startsWith(`node:${NODE_VERSION}-`), s.from).toBe(true);
    }
  });

  it('agent image installs BIRD 2, nftables, iproute2, util-linux and procps', () => {
    const runs = instructions(finalStage(images.agent), 'RUN').map((r) => r.text);
    const install = runs.find((r) => r.includes('apt-get install')) ?? '';
    for (const pkg of ['bird2', 'nftables', 'iproute2', 'util-linux', 'procps'])
      expect(install.split(/\s+/)).toContain(pkg);
    expect(install).toMatch(/ip -V \| grep/); // the build fails on an iproute2 older than 6.1
  });

  it('operator image runs as non-root with a bounded heap', () => {
    const final = finalStage(images.operator);
    const user = instructions(final, 'USER').at(-1)?.text ?? '0';
    expect(Number(user.split(':')[0])).toBeGreaterThan(0);
    const env = instructions(final, 'ENV')
      .map((e) => e.text)
      .join(' ');
    expect(env).toContain('NODE_OPTIONS=--max-old-space-size=256');
  });

  it('agent image bounds the heap (the chart sizes its memory limit on that)', () => {
    const env = instructions(finalStage(images.agent), 'ENV')
      .map((e) => e.text)
      .join(' ');
    expect(env).toContain('NODE_OPTIONS="--max-old-space-size=128 --max-semi-space-size=1"');
  });

  it("agent image sets the malloc settings the agent's memory figures are measured with", () => {
    const env = instructions(finalStage(images.agent), 'ENV').map((e) => e.text);
    const malloc = Object.entries(AGENT_MALLOC_ENV).map(([k, v]) => `${k}=${v}`);
    expect(env).toContain(malloc.join(' '));
  });

  it('image names in values.yaml are the images the Dockerfiles label', () => {
    const values = parse(readFileSync(join(CHART, 'values.yaml'), 'utf8')) as {
      operator: { image: { repository: string } };
      agent: { image: { repository: string } };
    };
    for (const image of ['agent', 'operator'] as const) {
      const labels = instructions(finalStage(images[image]), 'LABEL')
        .map((l) => l.text)
        .join(' ');
      const title = /org\.opencontainers\.image\.title="([^"]+)"/.exec(labels)?.[1];
      expect(values[image].image.repository.split('/').at(-1)).toBe(title);
    }
    const chart = parse(readFileSync(join(CHART, 'Chart.yaml'), 'utf8')) as { appVersion: string };
    for (const p of ['agent', 'operator', 'cni']) {
      expect(readPackage(p).version, `packages/${p} version = chart appVersion`).toBe(
        chart.appVersion,
      );
    }
  });
});

describe('what the images assemble', () => {
  // The harness and benchmarks compile to dist/testing and dist/bench (tsconfig.testing.json),
  // beside dist/src: the assemble step copies dist/src only, and deletes nothing.
  it.each(Object.keys(images))('%s: each @flock package is its package.json and dist/src', (x) => {
    const packages = join(assembled[x as keyof typeof images], 'app', 'packages');
    expect(unshippedPaths(packages)).toEqual([]);
    expect(testCode(packages)).toEqual([]);
  });
});

describe('the chart runs what the images hold', () => {
  it('operator: the command is the image entry point, it starts, and its flags parse', async () => {
    const spec = podSpec(objects, 'Deployment', 'flock-operator');
    const c = container(spec.containers, 'operator');
    expect(c.command).toEqual(entrypoint(finalStage(images.operator)));
    const main = inImage('operator', c.command![1]!);
    expect(main && existsSync(main), `${c.command![1]} in the assembled image`).toBe(true);
    const help = await run(process.execPath, [main!, '--help']);
    expect(help.stdout).toContain('usage: flock-operator');
    const version = await run(process.execPath, [main!, '--version']);
    expect(version.stdout.trim()).toBe(`flock-operator ${readPackage('operator').version}`);
    const opts = parseOptions(c.args ?? [], { POD_NAME: 'op-0', POD_NAMESPACE: 'flock-system' });
    expect(opts).toMatchObject({ namespace: 'flock-system', leaseName: 'flock-operator' });
    expect(opts.healthPort).toBe(9902);
  });

  it('agent: the command is the image entry point, it starts, and its flags parse', async () => {
    const spec = podSpec(objects, 'DaemonSet', 'flock-agent');
    const c = container(spec.containers, 'agent');
    expect(c.command).toEqual(entrypoint(finalStage(images.agent)));
    // Lite mode is part of the agent's memory budget (the chart's limit is sized on it).
    expect(c.command).toContain('--lite-mode');
    const main = inImage('agent', c.command!.at(-1)!);
    expect(main && existsSync(main), `${c.command!.at(-1)} in the assembled image`).toBe(true);
    // Every module loads; then the agent's own parser refuses the flag: proof it ran.
    const bogus = await run(process.execPath, [main!, '--bogus'], { okCodes: [2] });
    expect(bogus.stderr).toContain('unknown flag --bogus');
    const help = await run(process.execPath, [main!, '--help']);
    expect(help.stdout).toMatch(/^usage: flock-agent /);
    const version = await run(process.execPath, [main!, '--version']);
    expect(version.stdout.trim()).toBe(`flock-agent ${readPackage('agent').version}`);
    const config = loadAgentConfig(c.args ?? [], { NODE_NAME: 'node-a', POD_NAMESPACE: 'x' });
    expect(config).toMatchObject({
      nodeName: 'node-a',
      namespace: 'x',
      socketPath: '/run/flock/cni.sock',
      birdSocketPath: '/run/bird/bird.ctl',
    });
    // The BIRD container reads the config the agent writes, in a volume both mount.
    const bird = container(spec.containers, 'bird');
    const script = bird.command!.join(' ');
    expect(script).toContain(`-c ${config.birdConfigPath}`);
    expect(script).toContain(`-s ${config.birdSocketPath}`);
    const mountOf = (c2: typeof c, path: string) =>
      c2.volumeMounts.find((m) => path.startsWith(`${m.mountPath}/`))?.name;
    const volumes = (p: string) =>
      spec.volumes.find((v) => v.name === mountOf(c, p))?.hostPath?.path ?? mountOf(c, p);
    const birdVolumes = (p: string) =>
      spec.volumes.find((v) => v.name === mountOf(bird, p))?.hostPath?.path ?? mountOf(bird, p);
    expect(birdVolumes(config.birdSocketPath)).toBe(volumes(config.birdSocketPath));
    expect(birdVolumes(config.birdConfigPath)).toBe('/run/flock/bird');
    expect(volumes(config.birdConfigPath)).toBe('/run/flock');
  });

  it('Debian packages of the agent image provide the binaries the chart runs', async () => {
    const spec = podSpec(objects, 'DaemonSet', 'flock-agent');
    const owners: Record<string, string> = {
      '/usr/sbin/bird': 'bird2',
      '/usr/sbin/sysctl': 'procps',
      '/usr/bin/nsenter': 'util-linux',
      '/usr/sbin/nft': 'nftables',
    };
    expect(container(spec.initContainers, 'host-sysctls').command?.[0]).toBe('/usr/sbin/sysctl');
    expect(container(spec.containers, 'bird').command!.join(' ')).toContain('/usr/sbin/bird -f');
    for (const [path, pkg] of Object.entries(owners)) {
      // dpkg -S answers from the package database; merged /usr may list /sbin/… instead.
      const r = await run('dpkg', ['-S', path.replace(/^\/usr/, '')], { okCodes: [0, 1] });
      const r2 = await run('dpkg', ['-S', path], { okCodes: [0, 1] });
      expect(`${r.stdout}${r2.stdout}`, `${path} from ${pkg}`).toMatch(new RegExp(`^${pkg}:`, 'm'));
    }
  });

  it('install-cni puts the assembled plugin where the runtime and the launcher look', async () => {
    const spec = podSpec(objects, 'DaemonSet', 'flock-agent');
    const init = container(spec.initContainers, 'install-cni');
    const script = init.command!.at(-1)!;
    const puts = [...script.matchAll(/^put (\S+) (\S+) (\d+)$/gm)].map((m) => ({
      from: m[1]!,
      to: m[2]!,
    }));
    // Container path → host path through the init container's hostPath mounts.
    const host = (p: string) => {
      const m = init.volumeMounts.find((v) => p.startsWith(`${v.mountPath}/`))!;
      const v = spec.volumes.find((x) => x.name === m.name)!;
      return `${v.hostPath!.path}${p.slice(m.mountPath.length)}`;
    };
    const installed = Object.fromEntries(puts.map((p) => [host(p.to), p.from]));
    // A path inside a ConfigMap volume of the pod → that ConfigMap's entry.
    const fromConfigMap = (p: string) => {
      const m = init.volumeMounts.find((v) => p.startsWith(`${v.mountPath}/`));
      const v = spec.volumes.find((x) => x.name === m?.name) as { configMap?: { name: string } };
      if (!m || !v.configMap) return undefined;
      const cm = objects.find(
        (o) => o.kind === 'ConfigMap' && o.metadata.name === v.configMap!.name,
      );
      return (cm as { data?: Record<string, string> } | undefined)?.data?.[
        p.slice(m.mountPath.length + 1)
      ];
    };
    expect(Object.keys(installed).sort()).toEqual([
      '/etc/cni/net.d/10-flock.conflist',
      '/opt/cni/bin/flock',
      '/opt/cni/bin/flock.mjs',
      '/opt/flock/bin/node',
    ]);
    expect(installed['/opt/flock/bin/node']).toBe(NODE);
    // The launcher's default Node is exactly where the chart puts it.
    const launcher = readRepo('packages', 'cni', 'bin', 'flock');
    expect(launcher).toContain('node=${FLOCK_NODE:-/opt/flock/bin/node}');
    // The conflist is the chart's (cni.chainedPlugins), the programs the image's.
    const conflistFrom = installed['/etc/cni/net.d/10-flock.conflist']!;
    for (const [, from] of Object.entries(installed).filter(
      ([, f]) => f !== NODE && f !== conflistFrom,
    )) {
      const file = inImage('agent', from);
      expect(file && existsSync(file), `${from} in the assembled agent image`).toBe(true);
    }
    const conflist = JSON.parse(fromConfigMap(conflistFrom) ?? 'null') as {
      plugins: { type: string; socketPath: string }[];
    };
    expect(conflist).toEqual(
      JSON.parse(readRepo('packages', 'cni', 'examples', '10-flock.conflist')),
    );
    const agentArgs = container(spec.containers, 'agent').args ?? [];
    expect(agentArgs).toContain(`--socket=${conflist.plugins[0]!.socketPath}`);
    // The assembled launcher + bundle answer a runtime's VERSION call.
    const version = await run(inImage('agent', installed['/opt/cni/bin/flock']!)!, [], {
      env: { CNI_COMMAND: 'VERSION', FLOCK_NODE: process.execPath },
      input: '{"cniVersion":"1.1.0"}',
    });
    expect(JSON.parse(version.stdout)).toMatchObject({
      supportedVersions: ['0.4.0', '1.0.0', '1.1.0'],
    });
  });
});
