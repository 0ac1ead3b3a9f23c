// The generated CRDs on a real API server: established, CEL messages reach the user,
// status subresource semantics, printer columns.
import { join } from 'node:path';
import { CustomObjectsApi } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubectl, startControlPlane, waitForCrds, type ControlPlane } from '@flock/testkit';
import { ADDRESSCLAIM_PLURAL, GROUP, NODECONFIG_PLURAL, POOL_PLURAL, VERSION } from '../names.js';
import {
  claimObject,
  releasedServiceClaimSpec,
  validAnycastClaimSpec,
  validPinnedClaimSpec,
  validServiceClaimSpec,
} from '../../testing/claims.js';
import {
  boundedPoolSpec,
  invalidCases,
  invalidObject,
  nodeConfigObject,
  poolObject,
  validNodeConfigSpec,
  validPoolSpec,
} from '../../testing/testdata.js';

const crdDir = join(import.meta.dirname, '..', '..', '..', '..', 'crds');

describe('CRDs on the real API server', () => {
  let cp: ControlPlane;
  let api: CustomObjectsApi;
  const k = (...args: string[]) => kubectl(cp.kubeconfigPath, args);

  beforeAll(async () => {
    cp = await startControlPlane();
    api = cp.clientNodeConfig.makeApiClient(CustomObjectsApi);
    await k('apply', '-f', crdDir);
    await waitForCrds(cp.kubeconfigPath, [
      `${POOL_PLURAL}.${GROUP}`,
      `${NODECONFIG_PLURAL}.${GROUP}`,
      `${ADDRESSCLAIM_PLURAL}.${GROUP}`,
    ]);
  });
  afterAll(async () => cp?.stop());

  const create = (plural: string, body: object) =>
    api.createClusterCustomObject({ group: GROUP, version: VERSION, plural, body });

  it('accepts a valid Pool and NodeConfig and fills defaults', async () => {
    const spec = validPoolSpec() as Record<string, unknown>;
    spec['ipv6'] = { cidr: '2001:db8:100::/48' };
    const pool = (await create(POOL_PLURAL, poolObject('valid', spec))) as {
      spec: { ipv6: { nodePrefixLength: number } };
    };
    expect(pool.spec.ipv6.nodePrefixLength).toBe(64);
    await create(NODECONFIG_PLURAL, nodeConfigObject('node-valid', validNodeConfigSpec()));
  });

  it('accepts a Pool at every bound of its floating ranges (within the runtime cost limit)', async () => {
    await create(POOL_PLURAL, poolObject('bounded', boundedPoolSpec()));
  });

  const PLURALS = {
    Pool: POOL_PLURAL,
    NodeConfig: NODECONFIG_PLURAL,
    AddressClaim: ADDRESSCLAIM_PLURAL,
  } as const;

  it.each(invalidCases.map((c, i) => [c.name, c, i] as const))(
    'refuses: %s',
    async (_name, c, i) => {
      const err = await create(PLURALS[c.kind], invalidObject(c, `bad-${i}`)).then(
        () => undefined,
        (e: { code?: number; body?: string }) => e,
      );
      expect(err, 'the API server accepted an invalid object').toBeDefined();
      expect(err?.code).toBe(422);
      expect(String(err?.body)).toContain(c.apiServerMessage ?? c.message);
    },
  );

  it('accepts a pinned and an anycast claim, each named after its address', async () => {
    for (const spec of [validPinnedClaimSpec(), validAnycastClaimSpec()])
      await create(ADDRESSCLAIM_PLURAL, claimObject(spec));
    const claims = (await k('get', 'fclaim')).stdout;
    expect(claims.split('\n')[0]).toMatch(
      /NAME\s+ADDRESS\s+KIND\s+NAMESPACE\s+KEY\s+HOLDER\s+NODE\s+SERVICE\s+AGE/,
    );
    expect(claims).toMatch(
      /2001-0db8-0200-0000-0000-0000-0000-0010\s+2001:db8:200::10\s+Pinned\s+default\s+Deployment\/web\s+web-5d9c-x7k2p\s+node-a/,
    );
    expect(claims).toMatch(
      /203\.0\.113\.53\s+203\.0\.113\.53\s+Anycast\s+dns\s+Deployment\/resolver\s+node-a/,
    );
  });

  it('accepts a Service claim, lets its Services go and keeps it as the quarantine', async () => {
    const { metadata } = claimObject(validServiceClaimSpec());
    await create(ADDRESSCLAIM_PLURAL, claimObject(validServiceClaimSpec()));
    const claims = (await k('get', 'fclaim', '-o', 'wide')).stdout;
    expect(claims.split('\n')[0]).toMatch(/NODE\s+SERVICE\s+RELEASED\s+AGE/);
    expect(claims).toMatch(/2001:db8:400::1\s+Service\s+default\s+web-shared\s+web-http/);
    const patch = (s: object) =>
      k('patch', 'fclaim', metadata.name, '--type=merge', '-p', JSON.stringify({ spec: s }));
    await patch({ services: ['web-http'] });
    await patch({ services: [], releasedAt: releasedServiceClaimSpec().releasedAt });
    await expect(patch({ services: ['web-dns'] })).rejects.toThrow(/never both/);
    await expect(patch({ kind: 'Anycast' })).rejects.toThrow(/never change/);
  });

  it("keeps a claim's address, kind, namespace and key; holders change", async () => {
    const spec = { ...validPinnedClaimSpec(), address: '2001:db8:200::99' };
    const { metadata } = claimObject(spec);
    await create(ADDRESSCLAIM_PLURAL, claimObject(spec));
    const patch = (s: object) =>
      k('patch', 'fclaim', metadata.name, '--type=merge', '-p', JSON.stringify({ spec: s }));
    const fixed = /address, kind, namespace and key of a claim never change/;
    await expect(patch({ key: 'Deployment/other' })).rejects.toThrow(fixed);
    await expect(patch({ namespace: 'other' })).rejects.toThrow(fixed);
    await expect(patch({ kind: 'Anycast', holders: [{ node: 'node-a' }] })).rejects.toThrow(fixed);
    await patch({ holders: [{ node: 'node-b', pod: 'web-2', uid: 'u-2', withdrawn: false }] });
    await patch({ holders: [] });
  });

  it('keeps a NodeConfig prefix immutable', async () => {
    await create(NODECONFIG_PLURAL, nodeConfigObject('node-immutable', validNodeConfigSpec()));
    const patch = (spec: object) =>
      k('patch', 'nodeconfig', 'node-immutable', '--type=merge', '-p', JSON.stringify({ spec }));
    await expect(patch({ cidr6: '2001:db8:100:1::/64' })).rejects.toThrow(/cidr6 is immutable/);
    await expect(patch({ cidr4: null })).rejects.toThrow(/cidr4 cannot be changed or removed/);
    await patch({ anycastCIDRs: ['2001:db8:301::/120'] });
  });

  it('separates spec and status: each write leaves the other alone', async () => {
    await create(NODECONFIG_PLURAL, nodeConfigObject('node-status', validNodeConfigSpec()));
    const status = { observedGeneration: 1, advertisedRoutes: 3, conditions: [] };
    // A status write through the main resource is ignored...
    await k('patch', 'nodeconfig', 'node-status', '--type=merge', '-p', JSON.stringify({ status }));
    let obj = JSON.parse((await k('get', 'nodeconfig', 'node-status', '-o', 'json')).stdout);
    expect(obj.status).toBeUndefined();
    // ...and through /status it lands without bumping the generation.
    const gen = obj.metadata.generation;
    await k(
      'patch',
      'nodeconfig',
      'node-status',
      '--subresource=status',
      '--type=merge',
      '-p',
      JSON.stringify({ status, spec: { pool: 'other' } }),
    );
    obj = JSON.parse((await k('get', 'nodeconfig', 'node-status', '-o', 'json')).stdout);
    expect(obj.status.advertisedRoutes).toBe(3);
    expect(obj.spec.pool).toBe('dc1');
    expect(obj.metadata.generation).toBe(gen);
    // A spec change bumps the generation, so observedGeneration tells a stale status apart.
    await k(
      'patch',
      'nodeconfig',
      'node-status',
      '--type=merge',
      '-p',
      JSON.stringify({ spec: { anycastCIDRs: [] } }),
    );
    obj = JSON.parse((await k('get', 'nodeconfig', 'node-status', '-o', 'json')).stdout);
    expect(obj.metadata.generation).toBe(gen + 1);
    expect(obj.status.observedGeneration).toBe(1);
  });

  it('prints useful columns for kubectl get', async () => {
    const pools = (await k('get', 'pools')).stdout;
    expect(pools.split('\n')[0]).toMatch(
      /NAME\s+IPV6\s+IPV4\s+ASN\s+NODES\s+USED\s+FREE\s+READY\s+AGE/,
    );
    expect(pools).toContain('2001:db8:100::/48');
    const ncs = (await k('get', 'nodeconfigs')).stdout;
    expect(ncs.split('\n')[0]).toMatch(
      /NAME\s+POOL\s+CIDR6\s+CIDR4\s+PODS\s+ROUTES\s+BGP\s+POLICY\s+READY\s+AGE/,
    );
    expect(ncs).toMatch(/node-valid\s+dc1\s+2001:db8:100::\/64\s+192\.0\.2\.16\/28/);
    const short = (await k('get', 'fnc', '-o', 'wide')).stdout;
    expect(short.split('\n')[0]).toContain('ASN');
  });
});
