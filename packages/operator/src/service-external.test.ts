// spec.externalIPs on the in-memory API server: claimed for the Service only inside a Service
// range granted to it (any Service type), refused with a Warning inside a range it may not use,
// left alone outside every flock range, let go when the Service stops naming it; an address
// claimed by another owner stays theirs (CVE-2020-8554: naming an address is not owning it).
import { SERVICES } from '@flock/kube';
import { eventually } from '@flock/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import type { Operator } from './operator.js';
import { serviceWorld } from '../testing/service-world.js';
import { serviceObject, type ServiceInput } from '../testing/services.js';

const running: Operator[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((o) => o.stop()));
});

const world = async () => {
  const w = await serviceWorld({ serviceQuarantineMs: 60_000 });
  running.push(w.op);
  const putExternal = (name: string, externalIPs: string[], i: ServiceInput = {}) => {
    const s = serviceObject(name, { type: 'ClusterIP', families: ['IPv6'], ...i });
    w.server.putObject(SERVICES, { ...s, spec: { ...s.spec, externalIPs } });
  };
  return { ...w, putExternal };
};

const settle = () => new Promise((r) => setTimeout(r, 150));

describe('Service external IPs', () => {
  it('claims an external IP in a granted range for a ClusterIP Service, and lets it go', async () => {
    const w = await world();
    w.putExternal('ext', ['2001:db8:400:0:0:0:0:2', '198.51.100.7']);
    await eventually('claimed', () => w.claim('2001:db8:400::2') !== undefined);
    expect(w.claim('2001:db8:400::2')).toEqual({
      namespace: 'shop',
      key: 'Service/ext',
      services: ['ext'],
      released: false,
    });
    // Outside every flock range: not flock's, no claim, no Warning.
    await settle();
    expect(w.claims().map((c) => c.spec.address)).toEqual(['2001:db8:400::2']);
    expect(w.events('ext', 'AddressRefused')).toEqual([]);
    // The status is a load balancer's: external IPs never go there.
    expect(w.ingress('ext')).toEqual([]);
    w.putExternal('ext', []);
    await eventually('released', () => w.claim('2001:db8:400::2')?.released === true);
  });

  it('refuses an external IP in a range not granted to the namespace', async () => {
    const w = await world();
    w.putExternal('ext', ['2001:db8:400::3'], { namespace: 'other' });
    await eventually('refused', () => w.events('ext', 'AddressRefused').length > 0);
    expect(w.events('ext', 'AddressRefused')[0]?.note).toBe(
      "externalIP 2001:db8:400::3 is in a Service range not granted to namespace other (and Service ext's labels)",
    );
    expect(w.claim('2001:db8:400::3')).toBeUndefined();
  });

  it("never takes another owner's address, and shares one only by key", async () => {
    const w = await world();
    w.put('lb', { families: ['IPv6'] });
    await eventually('assigned', () => w.ingress('lb').length === 1);
    const [taken] = w.ingress('lb');
    w.putExternal('thief', [taken as string]);
    await eventually('conflict', () => w.events('thief', 'AddressSharingConflict').length > 0);
    expect(w.claim(taken as string)?.services).toEqual(['lb']);
    // Same sharing key and other ports: the address is shared.
    w.put('lb', { families: ['IPv6'], sharingKey: 'front' });
    await eventually('re-keyed', () => w.claim(w.ingress('lb')[0] as string)?.key === 'front');
    const [shared] = w.ingress('lb');
    w.putExternal('peer', [shared as string], { sharingKey: 'front', ports: [{ port: 443 }] });
    await eventually('shared', () => w.claim(shared as string)?.services?.length === 2);
    expect(w.claim(shared as string)?.services).toEqual(['lb', 'peer']);
  });

  it('keeps the external IP a LoadBalancer Service also asks for', async () => {
    const w = await world();
    const s = serviceObject('both', { families: ['IPv6'], request: '2001:db8:400::3' });
    w.server.putObject(SERVICES, { ...s, spec: { ...s.spec, externalIPs: ['2001:db8:400::3'] } });
    await eventually('assigned', () => w.ingress('both').length === 1);
    expect(w.ingress('both')).toEqual(['2001:db8:400::3']);
    // No longer a LoadBalancer: the address stays claimed for the external IP.
    w.server.putObject(SERVICES, {
      ...s,
      spec: { ...s.spec, type: 'ClusterIP', externalIPs: ['2001:db8:400::3'] },
      status: w.svc('both')?.status,
    });
    await eventually('status cleared', () => w.ingress('both').length === 0);
    await settle();
    expect(w.claim('2001:db8:400::3')).toMatchObject({ services: ['both'], released: false });
  });
});
