// A lab ready for Kubernetes' e2e specs, and one suite run on it (see cli.ts, and
// ../scenarios/conformance.cluster.test.ts for the subset `./dev test` runs).
import { run } from '@flock/exec';
import type { Logger } from '@flock/kube';
import { requireKernelTier } from '@flock/testkit';
import { Lab } from '../core/lab.js';
import type { PrimaryFamily } from '../core/plan.js';
import { E2E_BINARY, GINKGO, runGinkgo } from './ginkgo.js';
import { preloadE2eImages, type SctpSupport } from './prepare.js';
import type { SuiteReport } from './report.js';
import { routerClient } from './router-client.js';
import { SCTP_SPECS, type Suite } from './suites.js';

export interface ConformanceLabOptions {
  dir: string;
  nodes: number;
  log: Logger;
  progress?: (line: string) => void;
  /** The suite's programs (default: ginkgo and the e2e binary). */
  tools?: readonly string[];
  /** What the suite needs on the nodes; the images it returns are logged (default: the e2e images). */
  preload?: (lab: Lab) => Promise<string[]>;
  /** The lab's first family (default IPv6, flock's own). */
  primaryFamily?: PrimaryFamily;
  /** The e2e binaries whose images the default preload loads (default: E2E_BINARY). */
  imageBinaries?: readonly string[];
  /** flock as processes (default) or by its chart from its images, with these chart values. */
  install?: 'processes' | 'helm';
  helmValues?: string[];
}

/** What a conformance lab needs beyond the lab's own tools. */
export const CONFORMANCE_TOOLS = [GINKGO, E2E_BINARY];
/** Kubernetes' e2e specs assume its own node failure detection (see LabOptions). */
export const CONFORMANCE_LAB = { nodeFailureDetection: 'default' } as const;

/** agnhost preloaded under the e2e registry name on every node of a lab that is up. */
export async function preloadConformanceImages(lab: Lab): Promise<void> {
  const images = await preloadE2eImages(lab, lab.options.dir);
  lab.options.progress?.(`preloaded ${images.join(', ')} on every node`);
}

/**
 * A lab of real nodes (flock as processes) with Kubernetes' own node-failure timings and the
 * suite's images preloaded (by default agnhost and busybox under the e2e registry name).
 */
export async function conformanceLab(o: ConformanceLabOptions): Promise<Lab> {
  requireKernelTier(
    'bird',
    'nsenter',
    'unshare',
    'flock-controlplane',
    ...(o.tools ?? CONFORMANCE_TOOLS),
  );
  const lab = new Lab({
    nodes: o.nodes,
    dir: o.dir,
    log: o.log,
    ...CONFORMANCE_LAB,
    ...(o.progress ? { progress: o.progress } : {}),
    ...(o.primaryFamily ? { primaryFamily: o.primaryFamily } : {}),
    ...(o.install ? { install: o.install } : {}),
    ...(o.helmValues?.length ? { helmValues: o.helmValues } : {}),
  });
  await lab.up();
  try {
    const images = await (
      o.preload ?? ((l: Lab) => preloadE2eImages(l, o.dir, o.imageBinaries ?? [E2E_BINARY]))
    )(lab);
    o.progress?.(`preloaded ${images.join(', ')} on every node`);
  } catch (e) {
    await lab.down();
    throw e;
  }
  return lab;
}

export interface SuiteRunOptions {
  procs: number;
  reportDir: string;
  /** The kernel's SCTP support (loadSctp): without it the SCTP specs are skipped, with the reason. */
  sctp?: SctpSupport;
  onLine?: (line: string) => void;
}

export async function runSuite(lab: Lab, suite: Suite, o: SuiteRunOptions): Promise<SuiteReport> {
  const skipped = [
    ...suite.skip,
    ...(!o.sctp || o.sctp.available
      ? []
      : [{ pattern: SCTP_SPECS, reason: 'this kernel has no SCTP (see the evidence below)' }]),
  ];
  const client = suite.fromRouter ? await routerClient(lab, suite.fromRouter) : undefined;
  const result = await runGinkgo({
    kubeconfig: client?.kubeconfig ?? lab.cp!.kubeconfigPath,
    ...(client ? { netns: client.netns } : {}),
    focus: suite.focus,
    skip: skipped.map((s) => s.pattern),
    procs: suite.procs ?? o.procs,
    reportDir: o.reportDir,
    name: suite.name,
    ...(suite.binary ? { binary: suite.binary } : {}),
    ...(o.onLine ? { onLine: o.onLine } : {}),
  });
  if (result.suiteFailures.length)
    throw new Error(
      `${suite.name}: suite setup failed (${result.suiteFailures.map((f) => `${f.name}: ${f.message ?? f.status}`).join('; ')}); see ${result.log}`,
    );
  return {
    name: suite.name,
    about: suite.about,
    seconds: result.seconds,
    procs: suite.procs ?? o.procs,
    specs: result.specs,
    skipped,
  };
}

async function firstLine(file: string, args: string[]): Promise<string> {
  const r = await run(file, args).catch((e: unknown) => ({ stdout: String(e) }));
  return r.stdout.trim().split('\n')[0] ?? '';
}

/** The versions a report names: the e2e binary's and ginkgo's, and the cluster's. */
export async function versions(lab: Lab): Promise<Record<string, string>> {
  return {
    'Kubernetes e2e specs (k8s.io/kubernetes/test/e2e)': await firstLine(E2E_BINARY, ['--version']),
    ginkgo: await firstLine(GINKGO, ['version']),
    ...(await clusterVersions(lab)),
  };
}

/** The lab's components and flock's commit. */
export async function clusterVersions(lab: Lab): Promise<Record<string, string>> {
  const server = (await lab.api!.request({ method: 'GET', path: '/version' })) as {
    gitVersion?: string;
  };
  const flock = await run('git', ['rev-parse', '--short', 'HEAD']).then(
    (r) => r.stdout.trim(),
    () => 'unknown',
  );
  return {
    'kube-apiserver': server.gitVersion ?? 'unknown',
    'kubelet, kube-proxy (nftables mode)': await firstLine('kubelet', ['--version']),
    containerd: await firstLine('containerd', ['--version']),
    runc: await firstLine('runc', ['--version']),
    kernel: await firstLine('uname', ['-r']),
    flock: `git ${flock}`,
  };
}
