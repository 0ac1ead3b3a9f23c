// The load-balancer-cleanup finalizer on the in-memory API server (which holds a deleted object
// while it has finalizers, as the real one does): on a served Service before its address is
// claimed, taken off once its addresses are let go — at a type change, and at deletion, which
// then completes — and never put on a Service of another class.
import { LOAD_BALANCER_CLASS, type Service } from '@flock/api';
import { mergePatch, objectPath, SERVICES } from '@flock/kube';
import { eventually } from '@flock/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import type { Operator } from './operator.js';
import { LB_CLEANUP_FINALIZER } from './service-finalizer.js';
import { serviceWorld } from '../testing/service-world.js';

const running: Operator[] = [];
afterEach(async () => {
  await Promise.all(running.splice(0).map((o) => o.stop()));
});

const world = async () => {
  const w = await serviceWorld();
  running.push(w.op);
  return w;
};

/** A user's change of the type (a patch: the finalizers on the object stay). */
const retype = (w: { server: Parameters<typeof mergePatch>[0] }, name: string) =>
  mergePatch(w.server, SERVICES, name, 'shop', { spec: { type: 'ClusterIP' } });

const finalizers = (svc: Service | undefined) => svc?.metadata.finalizers ?? [];

describe('the load-balancer-cleanup finalizer', () => {
  it('is on a served Service before its claim, and off once the Service is no LoadBalancer', async () => {
    const w = await world();
    w.put('web', { families: ['IPv6'] });
    const [ip] = await eventually('assigned', () => {
      const ips = w.ingress('web');
      return ips.length ? ips : undefined;
    });
    expect(finalizers(w.svc('web'))).toEqual([LB_CLEANUP_FINALIZER]);
    // The finalizer was written before the claim was created.
    const order = w.server.requests
      .filter(
        (r) =>
          (r.method === 'PATCH' && r.path === objectPath(SERVICES, 'web', 'shop')) ||
          (r.method === 'POST' && r.path.endsWith('/addressclaims')),
      )
      .map((r) => r.method);
    expect(order.slice(0, 2)).toEqual(['PATCH', 'POST']);

    await retype(w, 'web');
    await eventually('released', () => w.claim(ip as string)?.released === true);
    await eventually('finalizer off', () => finalizers(w.svc('web')).length === 0);
    expect(w.ingress('web')).toEqual([]);
  });

  it('holds a deleted Service until its addresses are let go, then the deletion completes', async () => {
    const w = await world();
    w.put('web', { families: ['IPv6'] });
    const [ip] = await eventually('assigned', () => {
      const ips = w.ingress('web');
      return ips.length ? ips : undefined;
    });
    await eventually('finalizer on', () => finalizers(w.svc('web')).length === 1);
    await w.server.request({ method: 'DELETE', path: objectPath(SERVICES, 'web', 'shop') });
    await eventually('the Service gone', () => w.svc('web') === undefined);
    expect(w.claim(ip as string)?.released).toBe(true);
  });

  it('keeps the finalizers of others, and puts none on another class', async () => {
    const w = await world();
    w.server.putObject(SERVICES, {
      ...(w.put('web', { families: ['IPv6'] }) as object),
      metadata: { name: 'web', namespace: 'shop', finalizers: ['example.com/keep'] },
    } as never);
    w.put('foreign', { families: ['IPv6'], loadBalancerClass: 'example.com/lb' });
    w.put('ours', { families: ['IPv6'], loadBalancerClass: LOAD_BALANCER_CLASS });
    await eventually('web assigned', () => w.ingress('web').length === 1);
    await eventually('ours assigned', () => w.ingress('ours').length === 1);
    expect(finalizers(w.svc('web'))).toEqual(['example.com/keep', LB_CLEANUP_FINALIZER]);
    expect(finalizers(w.svc('foreign'))).toEqual([]);
    await retype(w, 'web');
    await eventually('ours off', () => finalizers(w.svc('web')).length === 1);
    expect(finalizers(w.svc('web'))).toEqual(['example.com/keep']);
  });
});
