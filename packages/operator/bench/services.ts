// Benchmark of the operator's Service address controller against the real API server on this
// machine, side by side for 100 and 1,000 LoadBalancer Services (ratios to the first row):
//   burst    N Services are created as fast as the API server takes them (32 in flight) while
//            the operator leads → every one has its address in status.loadBalancer.ingress
//            (per Service: POST sent → address seen by a watch, p50/p99; and the whole burst)
//   one      with N assigned, 20 more, one at a time → each one's POST → address (p50/p99):
//            what a user waits for on a busy cluster
//   restart  a new operator process over the N assigned → every Service reconciled, with no
//            claim or status written (asserted: a restart must not move an address)
// Each size on a fresh control plane. Figures, not assertions on time:
//   npm run bench:services -w @flock/operator      (BENCH_SERVICES=100,1000)
import { performance } from 'node:perf_hooks';
import { LOAD_BALANCER_CLASS, Service } from '@flock/api';
import { Cache, resourceListWatch, resourcePath, SERVICES, silentLogger } from '@flock/kube';
import { eventually } from '@flock/testkit';
import { Limiter } from '../src/limiter.js';
import { spawnOperator, type OperatorProcess } from '../testing/child.js';
import { applyPool, NAMESPACE, startCluster, type Cluster } from '../testing/cluster.js';
import { baseSpec } from '../testing/fixtures.js';
import { grantNamespace, serviceObject } from '../testing/services.js';

const SIZES = (process.env['BENCH_SERVICES'] ?? '100,1000').split(',').map(Number);
const ONE_AT_A_TIME = 20;
const MB = 1024 * 1024;

interface Row {
  services: number;
  burst: number;
  burstP50: number;
  burstP99: number;
  oneP50: number;
  oneP99: number;
  restart: number;
  rss: number;
}

const quantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? NaN;
};

/** When each Service (by name) was first seen with an address. */
function assignedWatch(c: Cluster) {
  const seen = new Map<string, number>();
  const cache = new Cache<Service>({
    source: resourceListWatch(c.api, SERVICES),
    schema: Service,
    logger: silentLogger,
  });
  const look = (s: Service) => {
    if (!seen.has(s.metadata.name) && (s.status?.loadBalancer?.ingress?.length ?? 0) > 0)
      seen.set(s.metadata.name, performance.now());
  };
  cache.addHandler({ onAdd: look, onUpdate: (_, s) => look(s), onDelete: () => undefined });
  cache.start();
  return { cache, seen };
}

async function createService(c: Cluster, name: string): Promise<number> {
  const { metadata, spec } = serviceObject(name, { loadBalancerClass: LOAD_BALANCER_CLASS });
  // The test control plane's Service CIDR is IPv4: the API server picks the family.
  const { ipFamilies: _f, ipFamilyPolicy: _p, ...rest } = spec;
  const sent = performance.now();
  await c.api.request({
    method: 'POST',
    path: resourcePath(SERVICES, { namespace: 'shop' }),
    body: { apiVersion: 'v1', kind: 'Service', metadata, spec: rest },
  });
  return sent;
}

async function counter(p: OperatorProcess, prefix: string): Promise<number> {
  const text = (await p.get('/metrics'))?.text ?? '';
  return text
    .split('\n')
    .filter((l) => l.startsWith(prefix))
    .reduce((sum, l) => sum + Number(l.split(' ').pop()), 0);
}

const until = (what: string, probe: () => boolean | Promise<boolean>) =>
  eventually(what, async () => (await probe()) || undefined, {
    timeoutMs: 600_000,
    intervalMs: 20,
  });

async function measure(n: number): Promise<Row> {
  const c = await startCluster();
  const w = assignedWatch(c);
  const procs: OperatorProcess[] = [];
  const spawn = async (name: string) => {
    const flags = ['--namespace', NAMESPACE, '--log-level', 'warn'];
    const p = await spawnOperator(name, c.cp.kubeconfigPath, flags);
    procs.push(p);
    await until(`${name} leads`, async () => (await p.leading()) === 1);
    return p;
  };
  try {
    await c.kubectl('create', 'namespace', 'shop');
    // 4,094 IPv4 addresses: the control plane's Services are IPv4.
    await applyPool(c, 'lb', {
      ...baseSpec(),
      services: {
        cidrs: ['2001:db8:400::/116', '10.200.0.0/20'],
        grants: [grantNamespace('shop')],
      },
    });
    await w.cache.waitForSync(30_000);
    const first = await spawn('bench-services');

    const limiter = new Limiter(32);
    const names = Array.from({ length: n }, (_, i) => `lb-${i}`);
    const sent = new Map<string, number>();
    const start = performance.now();
    const errors = await limiter.each(names, async (name) => {
      sent.set(name, await createService(c, name));
    });
    if (errors.length) throw new Error(`creating Services: ${String(errors[0])}`);
    await until('every Service assigned', () => names.every((x) => w.seen.has(x)));
    const burst = performance.now() - start;
    const burstLatency = names.map((x) => (w.seen.get(x) as number) - (sent.get(x) as number));

    const one: number[] = [];
    for (let i = 0; i < ONE_AT_A_TIME; i++) {
      const name = `one-${i}`;
      const at = await createService(c, name);
      await until(`${name} assigned`, () => w.seen.has(name));
      one.push((w.seen.get(name) as number) - at);
    }
    await new Promise((r) => setTimeout(r, 2_000)); // Events trail the writes
    const rss = first.memory().rss;
    await first.stop();

    const total = n + ONE_AT_A_TIME;
    const restartStart = performance.now();
    const second = await spawn('bench-services-restart');
    await until(
      'every Service reconciled',
      async () =>
        (await counter(second, 'flock_operator_reconcile_total{controller="services"')) >= total &&
        (await counter(second, 'flock_operator_workqueue_depth{name="services"')) === 0 &&
        (await counter(second, 'flock_operator_workqueue_in_flight{name="services"')) === 0,
    );
    const restart = performance.now() - restartStart;
    const writes =
      (await counter(second, 'flock_operator_writes_total{kind="claim_')) +
      (await counter(second, 'flock_operator_writes_total{kind="service_status"'));
    if (writes !== 0) throw new Error(`a restarted operator wrote ${writes} claims or statuses`);
    return {
      services: n,
      burst,
      burstP50: quantile(burstLatency, 0.5),
      burstP99: quantile(burstLatency, 0.99),
      oneP50: quantile(one, 0.5),
      oneP99: quantile(one, 0.99),
      restart,
      rss,
    };
  } finally {
    await Promise.all(procs.map((p) => p.stop()));
    await w.cache.stop();
    await c.cp.stop();
  }
}

const rows: Row[] = [];
for (const n of SIZES) {
  process.stdout.write(`measuring ${n} LoadBalancer Services...\n`);
  rows.push(await measure(n));
}
const base = rows[0] as Row;
const ms = (v: number) => `${v.toFixed(0)} ms`;
const ratio = (v: number, b: number) => `×${(v / b).toFixed(2)}`;
console.log(
  '\nflock-operator Service addresses against a real kube-apiserver + etcd (ratios to the first row)',
);
console.log(
  '  services | burst: all assigned | burst per Service p50 / p99 | one more at N p50 / p99 | restart: all reconciled, 0 writes | RSS',
);
for (const r of rows)
  console.log(
    [
      `  ${String(r.services).padStart(8)}`,
      `${ms(r.burst)} ${ratio(r.burst, base.burst)}`.padStart(19),
      `${ms(r.burstP50)} / ${ms(r.burstP99)}`.padStart(27),
      `${ms(r.oneP50)} / ${ms(r.oneP99)} ${ratio(r.oneP50, base.oneP50)}`.padStart(23),
      `${ms(r.restart)} ${ratio(r.restart, base.restart)}`.padStart(34),
      `${(r.rss / MB).toFixed(0)} MiB`,
    ].join(' | '),
  );
