// The Service address controller on the in-memory API server, run by the operator as it runs
// in a cluster: which Services get addresses (class, type, grants), of which families, which
// addresses (requested, lowest free, shared), what is refused and told, and how addresses are
// let go and quarantined.
import { claimName, LOAD_BALANCER_CLASS, type Pool } from '@flock/api';
import { ADDRESSCLAIMS, NAMESPACES, POOLS, SERVICES } from '@flock/kube';
import { createMemoryLogger } from '@flock/kube/testing';
import { eventually } from '@flock/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { startOperator, type Operator } from './operator.js';
import { serviceWorld, type ServiceWorldOptions } from '../testing/service-world.js';
import {
  grantNamespace,
  namespaceObject,
  serviceObject,
  servicePool,
} from '../testing/services.js';

const running: Operator[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((o) => o.stop()));
});

const world = async (o: ServiceWorldOptions = {}) => {
  const w = await serviceWorld(o);
  running.push(w.op);
  return w;
};

const settle = () => new Promise((r) => setTimeout(r, 150));

describe('Service addresses', () => {
  it('gives a dual-stack Service the lowest free address of each family, claim first', async () => {
    const w = await world();
    w.put('web');
    await eventually('addresses', () => w.ingress('web').length === 2);
    expect(w.svc('web')?.status?.loadBalancer?.ingress).toEqual([
      { ip: '2001:db8:400::1', ipMode: 'VIP' },
      { ip: '203.0.113.65', ipMode: 'VIP' },
    ]);
    for (const ip of ['2001:db8:400::1', '203.0.113.65'])
      expect(w.claim(ip)).toEqual({
        namespace: 'shop',
        key: 'Service/web',
        services: ['web'],
        released: false,
      });
    // The status write came after both claims were created.
    const writes = w.server.requests.filter((r) => r.method !== 'GET' && r.method !== 'WATCH');
    const status = writes.findIndex((r) => r.path.endsWith('/services/web/status'));
    const creates = writes.flatMap((r, i) =>
      r.method === 'POST' && r.path.includes('addressclaims') ? [i] : [],
    );
    expect(creates).toHaveLength(2);
    expect(Math.max(...creates)).toBeLessThan(status);
    w.put('api', { families: ['IPv4'] });
    await eventually('the next one', () => w.ingress('api').length === 1);
    expect(w.ingress('api')).toEqual(['203.0.113.66']);
    await eventually('pool counts', () => w.pool()?.status?.services?.ipv4?.assigned === 2);
    expect(w.pool()?.status?.services).toEqual({
      ipv6: { total: 3, assigned: 1, quarantined: 0, free: 2 },
      ipv4: { total: 2, assigned: 2, quarantined: 0, free: 0 },
    });
    expect(w.events('web', 'AddressAssigned').map((e) => e.note)).toEqual(
      expect.arrayContaining(['assigned 2001:db8:400::1', 'assigned 203.0.113.65']),
    );
    const metrics = await w.op.registry.metrics();
    expect(metrics).toContain(
      'flock_operator_service_addresses{pool="a",family="ipv4",state="assigned"} 2',
    );
  });

  it('follows the families: SingleStack takes the first, RequireDualStack refuses a missing one', async () => {
    const w = await world({ pools: [servicePool('a', { cidrs: ['2001:db8:400::/126'] })] });
    w.put('single', { families: ['IPv6', 'IPv4'], policy: 'SingleStack' });
    w.put('prefer', { families: ['IPv4', 'IPv6'], policy: 'PreferDualStack' });
    w.put('require', { families: ['IPv6', 'IPv4'], policy: 'RequireDualStack' });
    await eventually('prefer', () => w.ingress('prefer').length === 1);
    await eventually('single', () => w.ingress('single').length === 1);
    await eventually('refused', () => w.events('require', 'AddressRefused').length === 1);
    expect(w.events('require', 'AddressRefused')[0]?.note).toContain('an IPv4 range');
    expect(w.ingress('require')).toEqual([]);
    expect(w.claims().filter((c) => c.spec.services?.includes('require'))).toEqual([]);
  });

  it('gives a requested address when a grant covers it, and refuses one outside', async () => {
    const w = await world();
    w.put('asks', { request: '2001:db8:400::3, 203.0.113.66' });
    w.put('legacy', { families: ['IPv4'], loadBalancerIP: '203.0.113.65' });
    w.put('outside', { families: ['IPv6'], request: '2001:db8:401::1' });
    w.put('wrong-family', { families: ['IPv6'], request: '203.0.113.65' });
    await eventually('asks', () => w.ingress('asks').length === 2);
    expect(w.ingress('asks')).toEqual(['2001:db8:400::3', '203.0.113.66']);
    await eventually('legacy', () => w.ingress('legacy').length === 1);
    expect(w.ingress('legacy')).toEqual(['203.0.113.65']);
    await eventually('refusals', () => w.events('wrong-family', 'AddressRefused').length === 1);
    await eventually('refusals', () => w.events('outside', 'AddressRefused').length === 1);
    expect(w.events('outside', 'AddressRefused')[0]?.note).toBe(
      "2001:db8:401::1 is not in a Service range granted to namespace shop (and Service outside's labels)",
    );
    expect(w.ingress('outside')).toEqual([]);
    expect(w.claim('2001:db8:401::1')).toBeUndefined();

    // A new request lets the old address go (into quarantine) and takes the new one.
    w.put('asks', { request: '2001:db8:400::2' });
    await eventually('moved', () => w.ingress('asks').join() === '2001:db8:400::2');
    // Status first, then the claims let go.
    await eventually(
      'both released',
      () => w.claim('203.0.113.66')?.released && w.claim('2001:db8:400::3')?.released,
    );
    expect(w.claim('2001:db8:400::3')?.services).toEqual([]);
  });

  it('serves only namespaces (and Services) a grant covers, and follows label changes', async () => {
    const w = await world({
      pools: [
        servicePool('b', {
          cidrs: ['2001:db8:500::/126'],
          grants: [grantNamespace('other')],
          ipv6: '2001:db8:110::/60',
        }),
        servicePool('a', {
          grants: [
            grantNamespace('shop', { serviceSelector: { matchLabels: { expose: 'public' } } }),
            { namespaceSelector: { matchLabels: { team: 'web' } }, cidrs: ['203.0.113.64/30'] },
          ],
        }),
      ],
    });
    w.put('plain', { families: ['IPv6'] });
    w.put('public', { families: ['IPv6'], labels: { expose: 'public' } });
    w.put('theirs', { namespace: 'other', families: ['IPv6'] });
    await eventually('public', () => w.ingress('public').length === 1);
    expect(w.ingress('public')).toEqual(['2001:db8:400::1']);
    await eventually('theirs', () => w.ingress('theirs', 'other').length === 1);
    expect(w.ingress('theirs', 'other')).toEqual(['2001:db8:500::1']);
    await eventually('plain told', () => w.events('plain', 'AddressRefused').length === 1);
    expect(w.ingress('plain')).toEqual([]);

    // Labelled later: served. The namespace labelled team=web: its IPv4 range, not IPv6.
    w.put('plain', { families: ['IPv6'], labels: { expose: 'public' } });
    await eventually('plain', () => w.ingress('plain').length === 1);
    w.put('v4', { namespace: 'other', families: ['IPv4'] });
    await settle();
    expect(w.ingress('v4', 'other')).toEqual([]);
    w.server.putObject(NAMESPACES, namespaceObject('other', { team: 'web' }));
    await eventually('v4', () => w.ingress('v4', 'other').length === 1);

    // Leaving the grants: released and cleared.
    w.put('public', { families: ['IPv6'] });
    await eventually('public cleared', () => w.ingress('public').length === 0);
    await eventually('released', () => w.claim('2001:db8:400::1')?.released === true);
    expect(w.events('public', 'AddressReleased')[0]?.note).toBe('released 2001:db8:400::1');
  });

  it('shares an address between Services of one sharing key unless a port is used twice', async () => {
    const w = await world();
    const v4 = { families: ['IPv4' as const], sharingKey: 'front' };
    w.put('http', { ...v4, ports: [{ port: 80 }, { port: 443 }] });
    await eventually('http', () => w.ingress('http').length === 1);
    w.put('dns', { ...v4, ports: [{ port: 53, protocol: 'UDP' }, { port: 53 }] });
    await eventually('dns', () => w.ingress('dns').length === 1);
    expect(w.ingress('dns')).toEqual(['203.0.113.65']);
    expect(w.claim('203.0.113.65')).toMatchObject({ key: 'front', services: ['http', 'dns'] });

    // Port 443 again: not shared, the next address, and told why.
    w.put('alt', { ...v4, ports: [{ port: 443 }] });
    await eventually('alt', () => w.ingress('alt').length === 1);
    expect(w.ingress('alt')).toEqual(['203.0.113.66']);
    expect(w.events('alt', 'AddressSharingConflict')[0]?.note).toContain(
      'TCP/443 is used by Service http already',
    );
    // Asking for it: refused. Another key asking for it: refused too.
    w.put('ask', { ...v4, request: '203.0.113.65', ports: [{ port: 80 }] });
    w.put('stranger', { families: ['IPv4'], request: '203.0.113.65', ports: [{ port: 8080 }] });
    await eventually('ask', () => w.events('ask', 'AddressSharingConflict').length === 1);
    await eventually('stranger', () => w.events('stranger', 'AddressSharingConflict').length === 1);
    expect(w.events('stranger', 'AddressSharingConflict')[0]?.note).toContain(
      'with sharing key front, not Service/stranger',
    );
    expect(w.ingress('ask')).toEqual([]);
    // One leaves: the address stays with the other (no quarantine while one uses it).
    w.server.deleteObject(SERVICES, 'http', 'shop');
    await eventually('left', () => w.claim('203.0.113.65')?.services?.join() === 'dns');
    expect(w.claim('203.0.113.65')?.released).toBe(false);
  });

  it('tells a Service the pool is exhausted, and gives it the first address freed', async () => {
    const w = await world({ serviceQuarantineMs: 300, claimGcPeriodMs: 100 });
    const v4 = { families: ['IPv4' as const] };
    w.put('one', v4);
    w.put('two', v4);
    await eventually('both', () => w.ingress('one').length + w.ingress('two').length === 2);
    w.put('three', v4);
    await eventually('told', () => w.events('three', 'AddressPoolExhausted').length === 1);
    expect(w.events('three', 'AddressPoolExhausted')[0]?.note).toBe(
      'no free IPv4 address in the ranges of pool(s) a',
    );
    await eventually('condition', () =>
      w
        .pool()
        ?.status?.conditions?.some((c) => c.type === 'ServicesExhausted' && c.status === 'True'),
    );
    const cond = w.pool()?.status?.conditions?.find((c) => c.type === 'ServicesExhausted');
    expect(cond?.message).toBe('1 Service(s) wait for an address: shop/three');
    const freed = w.ingress('one')[0] as string;
    w.server.deleteObject(SERVICES, 'one', 'shop');
    await eventually('quarantined', () => w.claim(freed)?.released === true);
    expect(w.ingress('three')).toEqual([]);
    // After the quarantine the claim GC deletes the claim, and the waiting Service gets it.
    await eventually('three', () => w.ingress('three').join() === freed, { timeoutMs: 5_000 });
    await eventually('no longer exhausted', () =>
      w
        .pool()
        ?.status?.conditions?.some((c) => c.type === 'ServicesExhausted' && c.status === 'False'),
    );
  });

  it('keeps a released address for its own Service key, and from others until the quarantine ends', async () => {
    const w = await world();
    w.put('web', { families: ['IPv6'] });
    await eventually('web', () => w.ingress('web').length === 1);
    w.server.deleteObject(SERVICES, 'web', 'shop');
    await eventually('released', () => w.claim('2001:db8:400::1')?.released === true);
    w.put('api', { families: ['IPv6'] });
    await eventually('api', () => w.ingress('api').length === 1);
    expect(w.ingress('api')).toEqual(['2001:db8:400::2']);
    // Asking for it from another key: refused for now.
    w.put('grab', { families: ['IPv6'], request: '2001:db8:400::1' });
    await eventually('grab', () => w.events('grab', 'AddressRefused').length === 1);
    expect(w.events('grab', 'AddressRefused')[0]?.note).toMatch(/quarantined until/);
    // web comes back: same namespace and key, its address back at once.
    w.put('web', { families: ['IPv6'] });
    await eventually('web again', () => w.ingress('web').join() === '2001:db8:400::1');
    expect(w.claim('2001:db8:400::1')).toMatchObject({ services: ['web'], released: false });
  });

  it('serves its class and unset classes, never another class', async () => {
    const w = await world();
    w.put('ours', { families: ['IPv6'], loadBalancerClass: LOAD_BALANCER_CLASS });
    w.put('unset', { families: ['IPv6'] });
    const foreign = w.server.putObject(SERVICES, {
      ...serviceObject('foreign', { families: ['IPv6'], loadBalancerClass: 'example.com/lb' }),
      status: { loadBalancer: { ingress: [{ ip: '2001:db8:400::3' }] } },
    });
    await eventually(
      'ours and unset',
      () => w.ingress('ours').length + w.ingress('unset').length === 2,
    );
    await settle();
    expect(w.svc('foreign')?.metadata.resourceVersion).toBe(foreign.metadata.resourceVersion);
    expect(w.claims().filter((c) => c.spec.services?.includes('foreign'))).toEqual([]);

    // Ours moves to another class: its claim goes, its status is the other controller's.
    const before = w.ingress('ours');
    w.put('ours', { families: ['IPv6'], loadBalancerClass: 'example.com/lb' });
    await eventually('released', () => w.claim(before[0] as string)?.released === true);
    await settle();
    expect(w.server.requests.filter((r) => r.path.endsWith('/services/ours/status'))).toHaveLength(
      1,
    );
  });

  it('leaves Services without a class alone when told to', async () => {
    const w = await world({ serveUnsetLbClass: false });
    w.put('unset', { families: ['IPv6'] });
    w.put('ours', { families: ['IPv6'], loadBalancerClass: LOAD_BALANCER_CLASS });
    await eventually('ours', () => w.ingress('ours').length === 1);
    await settle();
    expect(w.ingress('unset')).toEqual([]);
    expect(w.events('unset')).toEqual([]);
  });

  it("never takes away another controller's address: with no Service ranges it stays silent", async () => {
    const other = { loadBalancer: { ingress: [{ ip: '198.51.100.7' }] } };
    const w = await world({ pools: [] });
    w.server.putObject(SERVICES, { ...serviceObject('web'), status: other });
    await settle();
    expect(w.svc('web')?.status).toEqual(other);
    expect(w.events('web')).toEqual([]);
    // Service ranges that do not cover namespace other: told, but its status is left as it is.
    w.server.putObject(POOLS, servicePool('a') as Pool);
    w.server.putObject(SERVICES, {
      ...serviceObject('api', { namespace: 'other' }),
      status: other,
    });
    await eventually('told', () => w.events('api', 'AddressRefused').length === 1);
    await settle();
    expect(w.svc('api', 'other')?.status).toEqual(other);
  });

  it('clears what it wrote when a Service stops being a LoadBalancer', async () => {
    const w = await world();
    w.put('web', { families: ['IPv6'] });
    await eventually('web', () => w.ingress('web').length === 1);
    w.server.putObject(SERVICES, {
      ...serviceObject('web', { families: ['IPv6'], type: 'ClusterIP' }),
      status: w.svc('web')?.status,
    });
    await eventually('cleared', () => w.ingress('web').length === 0);
    await eventually('released', () => w.claim('2001:db8:400::1')?.released === true);
    expect(w.claim('2001:db8:400::1')?.services).toEqual([]);
  });

  it('releases the addresses of a Service deleted while no operator ran', async () => {
    const w = await world({ serviceQuarantineMs: 60_000 });
    await w.op.stop();
    w.server.putObject(ADDRESSCLAIMS, {
      apiVersion: 'flock.fritzlab.net/v1alpha1',
      kind: 'AddressClaim',
      metadata: { name: claimName('2001:db8:400::2') },
      spec: {
        address: '2001:db8:400::2',
        kind: 'Service',
        namespace: 'shop',
        key: 'Service/gone',
        holders: [],
        services: ['gone'],
      },
    });
    const op = await startOperator({
      transport: w.server,
      logger: createMemoryLogger(),
      identity: 'op-2',
      leaderElect: false,
      processMetrics: false,
    });
    running.push(op);
    await eventually('released', () => w.claim('2001:db8:400::2')?.released === true);
  });
});
