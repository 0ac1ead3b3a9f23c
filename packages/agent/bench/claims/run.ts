// Address claims on a real API server (the test control plane), side by side in one run:
//   - the pinned-address check of an ADD before claims (a paged LIST of every pod of the
//     cluster that has not terminated, matched by address) against the claim that replaced it
//     (GET the claim, create it), with PODS pods in the cluster;
//   - 1,000 claims made and released, one at a time and 10 at a time.
// Figures, not assertions.
//   ./dev npx tsc -b packages/agent/tsconfig.testing.json && ./dev node packages/agent/dist/bench/claims/run.js
import { cpus } from 'node:os';
import { silentLogger } from '@flock/api';
import { HttpTransport, PODS, formatFieldSelector, resourceListWatch } from '@flock/kube';
import { table } from '@flock/testkit';
import { ClaimBook } from '../../src/claims/book.js';
import { createTestPod, startTestCluster } from '../../testing/test-cluster.js';

const PODS_IN_CLUSTER = Number(process.env['BENCH_PODS'] ?? 2000);
const SAMPLES = 100;
const CLAIMS = 1000;

const cluster = await startTestCluster('node-0');
try {
  const api = new HttpTransport(cluster.cp.kubeConfig);
  const book = new ClaimBook({
    transport: api,
    nodeName: 'node-0',
    logger: silentLogger,
    fetchPod: async () => undefined,
    nodeReady: async () => true,
  });
  // The cluster's pods (bound to a node; nothing runs them), written 20 at a time.
  for (let i = 0; i < PODS_IN_CLUSTER; i += 20)
    await Promise.all(
      Array.from({ length: Math.min(20, PODS_IN_CLUSTER - i) }, (_, j) =>
        createTestPod(api, { name: `p-${i + j}`, nodeName: 'node-0' }),
      ),
    );
  const source = resourceListWatch(api, PODS);
  const notTerminated = formatFieldSelector([
    { field: 'status.phase', op: '!=', value: 'Succeeded' },
    { field: 'status.phase', op: '!=', value: 'Failed' },
  ]);
  const timed = async (fn: () => Promise<unknown>) => {
    const t0 = performance.now();
    await fn();
    return performance.now() - t0;
  };
  const list: number[] = [];
  for (let i = 0; i < SAMPLES; i++)
    list.push(
      await timed(async () => {
        let token: string | undefined;
        do {
          const page = await source.list({
            limit: 500,
            fieldSelector: notTerminated,
            ...(token ? { continue: token } : {}),
          });
          token = page.continue;
        } while (token);
      }),
    );
  const claim: number[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const ip = `2001:db8:201::${(i + 1).toString(16)}`;
    const want = { namespace: 'default', key: 'Deployment/web', pod: 'web', uid: `u-${i}` };
    claim.push(await timed(() => book.claimPinned(ip, want)));
    await book.releasePinned(ip, `u-${i}`);
  }
  console.log(
    `address claims benchmark — node ${process.version}, ${cpus().length} cores, ${PODS_IN_CLUSTER} pods in the cluster`,
  );
  console.log(
    table(
      'the pinned-address check of one ADD',
      [
        { name: `before: LIST of ${PODS_IN_CLUSTER} pods, pages of 500`, ms: list },
        { name: 'after: the claim (GET, create)', ms: claim },
      ],
      [`before: LIST of ${PODS_IN_CLUSTER} pods, pages of 500`],
    ),
  );
  const many = async (concurrency: number) => {
    const ips = Array.from({ length: CLAIMS }, (_, i) => `2001:db8:202::${(i + 1).toString(16)}`);
    const run = async (op: (ip: string, i: number) => Promise<unknown>) => {
      const t0 = performance.now();
      for (let i = 0; i < ips.length; i += concurrency)
        await Promise.all(ips.slice(i, i + concurrency).map((ip, j) => op(ip, i + j)));
      return performance.now() - t0;
    };
    const made = await run((ip, i) =>
      book.claimPinned(ip, { namespace: 'default', key: 'k', pod: 'web', uid: `m-${i}` }),
    );
    const released = await run((ip, i) => book.releasePinned(ip, `m-${i}`));
    return { made, released };
  };
  for (const c of [1, 10]) {
    const r = await many(c);
    console.log(
      `${CLAIMS} claims, ${c} at a time: made in ${(r.made / 1000).toFixed(2)} s (${(r.made / CLAIMS).toFixed(2)} ms each), released in ${(r.released / 1000).toFixed(2)} s (${(r.released / CLAIMS).toFixed(2)} ms each)`,
    );
  }
} finally {
  await cluster.cp.stop();
}
