// Service addresses inside the real agent start-up, on the in-memory API server and FakeBird:
// announced from every node (Cluster) or from nodes with a ready endpoint (Local), withdrawn as
// soon as the endpoint terminates, only when claimed for the Service, and the Service CIDRs.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ADDRESSCLAIM_KIND, API_VERSION, claimName } from '@flock/api';
import { ADDRESSCLAIMS, ENDPOINT_SLICES, NODECONFIGS, SERVICES } from '@flock/kube';
import { createMemoryLogger, type FakeApiServer } from '@flock/kube/testing';
import { eventually } from '@flock/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../agent.js';
import { testAgentConfig } from '../../testing/agent-config.js';
import { FakeBird } from '../../testing/fake-bird.js';
import { FakeDatapath } from '../../testing/datapath/fake.js';
import { routingApiServer } from '../../testing/routing-api.js';
import { NODE_CONFIG } from '../../testing/routing-fixtures.js';

const WEB = '2001:db8:400::1';
const API = '2001:db8:400::2';
let dir: string;
let api: FakeApiServer;
let bird: FakeBird;
let agent: RunningAgent | undefined;
/** kube-proxy's answer per health check port (what the agent asks before a Local address). */
let kubeProxy: Map<number, boolean>;
let asked: string[];
/** The "address protocol port" kube-proxy's rules hold ('all': every one). */
let rules: Set<string> | 'all';
/** Reads of kube-proxy's rules. */
let reads: number;
/** How long kube-proxy takes to answer (health check and rules). */
let kubeProxyDelayMs: number;

function service(name: string, ip: string, local = false, healthCheckNodePort?: number): void {
  api.putObject(SERVICES, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { namespace: 'shop', name },
    spec: {
      type: 'LoadBalancer',
      externalTrafficPolicy: local ? 'Local' : 'Cluster',
      ...(healthCheckNodePort ? { healthCheckNodePort } : {}),
      ports: [{ port: 443, protocol: 'TCP' }],
    },
    status: { loadBalancer: { ingress: [{ ip }] } },
  } as never);
}

function claim(ip: string, services: string[]): void {
  api.putObject(ADDRESSCLAIMS, {
    apiVersion: API_VERSION,
    kind: ADDRESSCLAIM_KIND,
    metadata: { name: claimName(ip) },
    spec: {
      address: ip,
      kind: 'Service',
      namespace: 'shop',
      key: `Service/${services[0]}`,
      holders: [],
      services,
    },
  } as never);
}

function endpoints(name: string, here: { ready: boolean; terminating?: boolean }[]): void {
  api.putObject(ENDPOINT_SLICES, {
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: {
      namespace: 'shop',
      name: `${name}-abcde`,
      labels: { 'kubernetes.io/service-name': name },
    },
    endpoints: [
      ...here.map((c, i) => ({
        addresses: [`2001:db8:100::${i + 10}`],
        nodeName: 'node-a',
        conditions: c,
      })),
      { addresses: ['2001:db8:101::10'], nodeName: 'node-b', conditions: { ready: true } },
    ],
  } as never);
}

const announced = (ip: string) => bird.announced().includes(`${ip}/128`);

const start = async () =>
  (agent = await startAgent({
    config: testAgentConfig(dir, { birdConfigPath: bird.configPath, anycastPeriodMs: '100ms' }),
    transport: api,
    datapath: new FakeDatapath(),
    logger: createMemoryLogger(),
    bird: { reload: bird, status: bird },
    kubeProxyHealth: async (address, port) => {
      asked.push(`${address}:${port}`);
      await new Promise((r) => setTimeout(r, kubeProxyDelayMs));
      return kubeProxy.get(port) ?? false;
    },
    readKubeProxy: async () => {
      reads++;
      await new Promise((r) => setTimeout(r, kubeProxyDelayMs));
      const held = rules === 'all' ? 'all' : new Set(rules);
      return {
        has: (address, protocol, port) =>
          held === 'all' || held.has(`${address} ${protocol} ${port}`),
      };
    },
  }));

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flock-services-'));
  api = routingApiServer();
  api.putObject(NODECONFIGS, {
    ...NODE_CONFIG,
    spec: {
      ...NODE_CONFIG.spec,
      serviceCIDRs: ['2001:db8:400::/120'],
      clusterIPCIDRs: ['fd00:10:96::/112'],
    },
  });
  bird = new FakeBird(join(dir, 'bird.conf'));
  bird.up = true;
  kubeProxy = new Map();
  asked = [];
  rules = 'all';
  reads = 0;
  kubeProxyDelayMs = 0;
  await start();
});
afterEach(async () => {
  await agent?.stop();
  agent = undefined;
  await rm(dir, { recursive: true, force: true });
});

describe('Service addresses in the agent', () => {
  it('announces the Service CIDRs, and a Cluster Service address from every node', async () => {
    await eventually('Service CIDR announced', () => bird.announced().includes('fd00:10:96::/112'));
    service('web', WEB);
    claim(WEB, ['web']);
    await eventually('web announced', () => announced(WEB));
    expect(agent!.routing.announcements?.services.get(WEB)).toEqual({
      service: 'shop/web',
      why: 'externalTrafficPolicy Cluster',
    });
  });

  it('Local: announced while this node has a ready endpoint, withdrawn as soon as it terminates', async () => {
    service('api', API, true);
    claim(API, ['api']);
    endpoints('api', []);
    await new Promise((r) => setTimeout(r, 300));
    expect(announced(API)).toBe(false); // another node's endpoint does not count
    endpoints('api', [{ ready: true }]);
    await eventually('announced with a ready endpoint here', () => announced(API));
    // A rollout: the endpoint is terminating but still serving; the node withdraws now.
    endpoints('api', [{ ready: false, terminating: true }]);
    await eventually('withdrawn while it drains', () => !announced(API));
  });

  it('never announces an address not claimed for the Service', async () => {
    service('web', WEB);
    claim(WEB, ['other']);
    service('squat', API);
    await new Promise((r) => setTimeout(r, 400));
    expect(announced(WEB)).toBe(false);
    expect(announced(API)).toBe(false);
    expect(agent!.routing.announcements?.warnings).toEqual([
      `Service address ${WEB} of shop/web is not claimed for it`,
      `Service address ${API} of shop/squat is not claimed for it`,
    ]);
  });

  it("Local: waits for kube-proxy's health check of the Service on this node before announcing", async () => {
    service('api', API, true, 30551);
    claim(API, ['api']);
    endpoints('api', [{ ready: true }]);
    await eventually('kube-proxy asked on the node address', () =>
      asked.includes('10.0.0.10:30551'),
    );
    await new Promise((r) => setTimeout(r, 300));
    expect(announced(API)).toBe(false); // ready in the EndpointSlice, not yet in kube-proxy
    kubeProxy.set(30551, true);
    await eventually('announced once kube-proxy delivers here', () => announced(API));
  });

  it("a new address waits for kube-proxy's rules to hold it (Cluster and Local); held ones are not read again", async () => {
    rules = new Set();
    kubeProxy.set(30551, true);
    service('web', WEB);
    claim(WEB, ['web']);
    service('api', API, true, 30551);
    claim(API, ['api']);
    endpoints('api', [{ ready: true }]);
    await eventually('kube-proxy read', () => reads > 0);
    await new Promise((r) => setTimeout(r, 300));
    // The health check says 200 for api, yet kube-proxy has not synced either address.
    expect(announced(WEB)).toBe(false);
    expect(announced(API)).toBe(false);
    rules.add(`${WEB} TCP 443`);
    await eventually('web announced once kube-proxy holds it', () => announced(WEB));
    expect(announced(API)).toBe(false);
    rules.add(`${API} TCP 443`);
    await eventually('api announced once kube-proxy holds it', () => announced(API));
    const before = reads;
    await new Promise((r) => setTimeout(r, 400)); // passes run every 100 ms
    expect(reads).toBe(before);
  });

  it("a restarted agent asks kube-proxy about claimed addresses only: a tenant's unclaimed external IP costs no reads", async () => {
    rules = new Set([`${WEB} TCP 443`]);
    service('web', WEB);
    claim(WEB, ['web']);
    // A Local Service of the tenant's own making: an address in the range it holds no claim on.
    service('squat', API, true, 30552);
    endpoints('squat', [{ ready: true }]);
    await eventually('web announced', () => announced(WEB));
    await agent!.stop();
    reads = 0;
    asked = [];
    await start();
    await eventually('web announced after the restart', () => announced(WEB));
    await new Promise((r) => setTimeout(r, 1_500)); // a waiting address is read after 0.2, 0.4, 0.8 s
    expect(reads).toBe(1);
    expect(asked.filter((a) => a.endsWith(':30552'))).toEqual([]);
    expect(announced(API)).toBe(false);
  });

  it('a restarted agent never renders a model without the Service addresses it announced', async () => {
    service('web', WEB);
    claim(WEB, ['web']);
    service('api', API, true, 30551);
    claim(API, ['api']);
    endpoints('api', [{ ready: true }]);
    kubeProxy.set(30551, true);
    await eventually('both announced', () => announced(WEB) && announced(API));
    await agent!.stop();
    const before = bird.history.length;
    kubeProxyDelayMs = 300; // a real HTTP round trip is not instant either
    await start();
    await eventually('the restarted agent rendered', () => bird.history.length > before);
    await new Promise((r) => setTimeout(r, 500));
    for (const model of bird.history.slice(before)) {
      expect(model).toContain(`${WEB}/128`);
      expect(model).toContain(`${API}/128`);
    }
  });
});
