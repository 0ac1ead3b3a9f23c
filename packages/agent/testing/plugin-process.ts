// The flock CNI plugin as a container runtime sees it, for the agent's contract tests and the
// plugin latency bench: the bundle and its launcher installed in one directory (as in
// /opt/cni/bin), started as a process with CNI_* variables and the configuration on stdin.
// The agent never imports the plugin: it builds and runs it, as a runtime would.
import { chmod, copyFile, mkdtemp } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { run } from '@flock/exec';

export interface PluginInstall {
  dir: string;
  /** bin/flock, the file the runtime executes. */
  launcher: string;
  /** flock.mjs, the bundled plugin. */
  bundle: string;
  /** Node.js the launcher runs (a copy inside `dir` when asked for, else this process's). */
  node: string;
}

/**
 * Bundle the plugin from its current sources into `dir` (default: a new temp directory);
 * `probes` adds the bench's start-up probes (probe-zod-full.mjs, probe-zod-mini.mjs).
 */
export async function installPlugin(
  dir?: string,
  options: { probes?: boolean; copyNode?: boolean } = {},
): Promise<PluginInstall> {
  const cniRoot = dirname(createRequire(import.meta.url).resolve('@flock/cni/package.json'));
  const out = dir ?? (await mkdtemp(join(tmpdir(), 'flock-cni-')));
  const probes = options.probes ? ['--probes'] : [];
  await run(
    process.execPath,
    [join(cniRoot, 'scripts', 'bundle.mjs'), '--outdir', out, ...probes],
    {
      timeoutMs: 120_000,
    },
  );
  // A copy of Node next to the plugin, as the DaemonSet installs /opt/flock/bin/node: tests that
  // run the plugin as another user must not depend on that user reaching this repository.
  const node = options.copyNode ? join(out, 'node') : process.execPath;
  if (options.copyNode) {
    await copyFile(process.execPath, node);
    await chmod(node, 0o755);
  }
  return { dir: out, launcher: join(out, 'flock'), bundle: join(out, 'flock.mjs'), node };
}

interface PluginRun {
  stdout: string;
  stderr: string;
  code: number;
  /** stdout parsed, when there was any. */
  output: Record<string, unknown> | undefined;
}

/** The CNI_* variables a test does not set are passed empty, which the spec reads as unset. */
const CNI_VARIABLES = ['CNI_COMMAND', 'CNI_CONTAINERID', 'CNI_NETNS', 'CNI_IFNAME', 'CNI_ARGS'];

/**
 * Run the plugin once. `as: 'nobody'` drops to uid/gid 65534 first (setpriv; needs root).
 * Node is `plugin.node` (FLOCK_NODE), as the launcher would find /opt/flock/bin/node.
 */
export async function invokePlugin(
  plugin: PluginInstall,
  env: Record<string, string>,
  stdin: string,
  options: { as?: 'nobody'; timeoutMs?: number } = {},
): Promise<PluginRun> {
  const cleared = Object.fromEntries(CNI_VARIABLES.map((v) => [v, '']));
  const [file, args] =
    options.as === 'nobody'
      ? ['setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', plugin.launcher]]
      : [plugin.launcher, []];
  const r = await run(file, args, {
    input: stdin,
    env: { ...cleared, CNI_PATH: '/opt/cni/bin', FLOCK_NODE: plugin.node, ...env },
    okCodes: [0, 1],
    timeoutMs: options.timeoutMs ?? 30_000,
  });
  const trimmed = r.stdout.trim();
  return {
    ...r,
    output: trimmed ? (JSON.parse(trimmed) as Record<string, unknown>) : undefined,
  };
}
