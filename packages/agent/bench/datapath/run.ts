// Datapath benchmark (root): 100 pods set up and torn down one after another in test
// namespaces, against the floor of the same kernel work without the datapath's logic.
//   ./dev npx nx run agent:build-testing && ./dev node packages/agent/dist/bench/datapath/run.js
// Not a test: nothing here passes or fails on time. The node side runs in a test namespace,
// so every node-side command pays one nsenter exec that production (plain `ip`) does not.
import { performance } from 'node:perf_hooks';
import { cpus, release } from 'node:os';
import { run } from '@flock/exec';
import { Netns } from '@flock/testkit';
import { batchText, actionTokens } from '../../src/datapath/commands.js';
import { IprouteDatapath } from '../../src/datapath/iproute.js';
import { hostVethName, vethMacs } from '../../src/datapath/naming.js';
import { freshHostActions, freshPodActions } from '../../src/datapath/plan.js';
import type { PodSpec } from '../../src/datapath/types.js';
import { validatePod } from '../../src/datapath/validate.js';

const PODS = 100;

function stats(ms: number[]) {
  const s = [...ms].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)] ?? NaN;
  return { p50: at(0.5), p99: at(0.99), mean: s.reduce((a, b) => a + b, 0) / s.length, max: at(1) };
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

async function main(): Promise<void> {
  if (process.getuid?.() !== 0)
    throw new Error('the datapath benchmark needs root (network namespaces)');
  const node = await Netns.create('dpbench');
  const pods: Netns[] = [];
  try {
    await node.exec('sysctl', ['-w', 'net.ipv6.conf.all.forwarding=1']);
    for (let i = 0; i < PODS; i++) pods.push(await Netns.create('dpbpod'));
    const spec = (i: number, tag: string): PodSpec => ({
      containerID: `bench-${tag}-${i}`,
      ifName: 'eth0',
      netns: pods[i]!.path,
      hostVeth: hostVethName(`bench-${tag}-${i}`, 'eth0'),
      ip6: `2001:db8:100::${(i + 1).toString(16)}`,
      ip4: `192.0.2.${i + 1}`,
    });
    const nodeIp = (input: string, force = false) =>
      run('nsenter', [`--net=${node.path}`, 'ip', ...(force ? ['-force'] : []), '-batch', '-'], {
        input,
      });
    const podIp = (i: number, input: string) =>
      run('nsenter', [`--net=${pods[i]!.path}`, 'ip', '-batch', '-'], { input });
    const batches = (s: PodSpec) => {
      const pod = validatePod(s);
      const macs = vethMacs(pod.containerID, pod.ifName);
      return {
        host: batchText(freshHostActions(pod, macs).map(actionTokens)),
        pod: batchText(freshPodActions(pod, macs.hostMac).map(actionTokens)),
      };
    };

    // 1. The datapath itself.
    const dp = new IprouteDatapath({ hostNetns: node.path });
    const setup: number[] = [];
    const teardown: number[] = [];
    for (let i = 0; i < PODS; i++) setup.push(await timed(() => dp.setupPod(spec(i, 'dp'))));
    const again: number[] = [];
    const check: number[] = [];
    for (let i = 0; i < PODS; i++) again.push(await timed(() => dp.setupPod(spec(i, 'dp'))));
    for (let i = 0; i < PODS; i++) check.push(await timed(() => dp.checkPod(spec(i, 'dp'))));
    for (let i = 0; i < PODS; i++) teardown.push(await timed(() => dp.teardownPod(spec(i, 'dp'))));

    // 2. The same two batches per pod, pre-rendered and run directly (the process floor).
    const rawSetup: number[] = [];
    const rawTeardown: number[] = [];
    for (let i = 0; i < PODS; i++) {
      const b = batches(spec(i, 'raw'));
      rawSetup.push(await timed(async () => (await nodeIp(b.host), await podIp(i, b.pod))));
    }
    for (let i = 0; i < PODS; i++)
      rawTeardown.push(await timed(() => nodeIp(`link del dev ${spec(i, 'raw').hostVeth}\n`)));

    // 3. The kernel work alone: every node side in one ip process (pod sides cannot share one:
    //    each is another namespace), per pod.
    const all = Array.from({ length: PODS }, (_, i) => batches(spec(i, 'one')));
    const oneHost = await timed(() => nodeIp(all.map((b) => b.host).join('')));
    let podSides = 0;
    for (let i = 0; i < PODS; i++) podSides += await timed(() => podIp(i, all[i]!.pod));
    const oneDel = await timed(() =>
      nodeIp(
        Array.from({ length: PODS }, (_, i) => `link del dev ${spec(i, 'one').hostVeth}\n`).join(
          '',
        ),
      ),
    );

    const f = (n: number) => n.toFixed(2);
    const s = stats(setup);
    const r = stats(rawSetup);
    const t = stats(teardown);
    const rt = stats(rawTeardown);
    const kernelSetup = oneHost / PODS + podSides / PODS;
    console.log(`# flock datapath benchmark — ${new Date().toISOString()}`);
    console.log(
      `node ${process.version}, Linux ${release()}, ${cpus().length} CPUs, ${PODS} pods in sequence\n`,
    );
    console.log(
      '| operation | p50 ms | p99 ms | mean ms | max ms | floor p50 ms | floor p99 ms | p50 ratio | p99 ratio |',
    );
    console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    console.log(
      `| setupPod (2 processes) | ${f(s.p50)} | ${f(s.p99)} | ${f(s.mean)} | ${f(s.max)} | ${f(r.p50)} | ${f(r.p99)} | ${f(s.p50 / r.p50)} | ${f(s.p99 / r.p99)} |`,
    );
    console.log(
      `| teardownPod (read + delete) | ${f(t.p50)} | ${f(t.p99)} | ${f(t.mean)} | ${f(t.max)} | ${f(rt.p50)} | ${f(rt.p99)} | ${f(t.p50 / rt.p50)} | ${f(t.p99 / rt.p99)} |`,
    );
    console.log(
      `\nfloor = the same pre-rendered ip batches run directly (setup: 2 processes; teardown: 1 \`ip link del\`).`,
    );
    for (const [what, ms] of [
      ['setupPod on a wired pod (refused link add + one read per side, no write)', again],
      ['checkPod (one read per side, in parallel)', check],
    ] as const) {
      const x = stats(ms);
      console.log(`${what}: p50 ${f(x.p50)} ms, p99 ${f(x.p99)} ms`);
    }
    console.log(
      `kernel work per pod with launches amortised (all node sides in one ip -batch, ${f(oneHost)} ms; pod sides ${f(podSides / PODS)} ms each): ` +
        `setup ${f(kernelSetup)} ms → setupPod p50 is ${f(s.p50 / kernelSetup)}× that; teardown ${f(oneDel / PODS)} ms → teardownPod p50 is ${f(t.p50 / (oneDel / PODS))}×`,
    );
  } finally {
    for (const p of pods) await p.destroy();
    await node.destroy();
  }
}

main().catch((e: unknown) => {
  console.error(e);
  process.exitCode = 1;
});
