// The operator (in-process) through the faults a real control plane has: the API server
// (and etcd) restarting under it, and a watch connection that goes silent without closing
// (a frozen TCP proxy) — the cache's watchdog restarts it and the operator converges.
import { HttpTransport, type KubeTransport } from '@flock/kube';
import { createMemoryLogger, type MemoryLogger } from '@flock/kube/testing';
import { eventually, startTcpProxy, type TcpProxy } from '@flock/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startOperator, type Operator } from './operator.js';
import {
  applyPool,
  configsOf,
  createNode,
  NAMESPACE,
  startCluster,
  type Cluster,
} from '../testing/cluster.js';
import { baseSpec } from '../testing/fixtures.js';

let c: Cluster;
let op: Operator | undefined;
let proxy: TcpProxy | undefined;
beforeAll(async () => {
  c = await startCluster();
});
afterEach(async () => {
  await op?.stop();
  op = undefined;
  await proxy?.close();
  proxy = undefined;
});
afterAll(async () => c?.cp.stop());

const FAST = { leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 };
const spec = (label: string, cidr: string) => ({
  ...baseSpec(),
  nodeSelector: { matchLabels: { test: label } },
  ipv6: { cidr, nodePrefixLength: 64 },
});
const count = (pool: string, n: number, timeoutMs = 60_000) =>
  eventually(`${n} NodeConfigs of ${pool}`, async () => (await configsOf(c.api, pool)).size === n, {
    timeoutMs,
  });

describe('operator resilience', () => {
  it('recovers from an API server restart and converges', async () => {
    await applyPool(c, 'rs', spec('rs', '2001:db8:40::/60'));
    await createNode(c.api, 'rs-0', { test: 'rs' });
    const log = createMemoryLogger();
    op = await startOperator({
      transport: new HttpTransport(c.cp.kubeConfig),
      logger: log,
      identity: 'rs',
      namespace: NAMESPACE,
      ...FAST,
    });
    await count('rs', 1);
    await c.cp.restart();
    await createNode(c.api, 'rs-1', { test: 'rs' });
    await createNode(c.api, 'rs-2', { test: 'rs' });
    await count('rs', 3, 120_000);
    const ncs = await configsOf(c.api, 'rs');
    expect([...ncs.values()].map((nc) => nc.spec.cidr6).sort()).toEqual([
      '2001:db8:40:1::/64',
      '2001:db8:40:2::/64',
      '2001:db8:40::/64',
    ]);
    // It noticed: watches failed and were re-established.
    expect(
      log.find('warn', 'watch').length + log.find('warn', 'list failed').length,
    ).toBeGreaterThan(0);
    await eventually('leading again', () => op?.isLeader());
  });

  it('restarts a watch that went silent (frozen connection) and converges', async () => {
    await applyPool(c, 'silent', spec('silent', '2001:db8:41::/60'));
    await createNode(c.api, 'silent-0', { test: 'silent' });
    proxy = await startTcpProxy(Number(new URL(c.cp.server).port));
    const direct = new HttpTransport(c.cp.kubeConfig);
    const proxied = new HttpTransport(c.cp.kubeConfigVia(`https://127.0.0.1:${proxy.port}`));
    // Requests (lease renewals, writes) go straight to the server; watches go through the
    // proxy until it is frozen, and straight afterwards: only the watchdog gets them back.
    let viaProxy = true;
    const transport: KubeTransport = {
      request: (req) => direct.request(req),
      watch: (req, onEvent, onDone) => (viaProxy ? proxied : direct).watch(req, onEvent, onDone),
    };
    const log: MemoryLogger = createMemoryLogger();
    op = await startOperator({
      transport,
      logger: log,
      identity: 'silent',
      namespace: NAMESPACE,
      watchdogMs: 3_000,
      ...FAST,
    });
    await count('silent', 1);
    proxy.freeze();
    viaProxy = false;
    await createNode(c.api, 'silent-1', { test: 'silent' });
    await count('silent', 2, 60_000);
    expect(log.find('warn', 'watch silent for too long').map((e) => e.meta['cache'])).toContain(
      'nodes',
    );
    const metrics = await op.registry.getSingleMetricAsString(
      'flock_operator_cache_watch_ends_total',
    );
    expect(metrics).toMatch(/cache="nodes",reason="stalled"\} [1-9]/);
  });
});
