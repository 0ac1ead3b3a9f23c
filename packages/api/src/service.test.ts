import { describe, expect, it } from 'vitest';
import { parseLoadBalancerIps } from './annotations.js';
import { LOAD_BALANCER_IPS_ANNOTATION, SHARING_KEY_ANNOTATION } from './names.js';
import { requestedServiceAddresses, Service, serviceSharingKey } from './service.js';

const service = (o: { annotations?: Record<string, string>; loadBalancerIP?: string } = {}) =>
  Service.parse({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: 'web', namespace: 'shop', annotations: o.annotations },
    spec: {
      type: 'LoadBalancer',
      ipFamilies: ['IPv6', 'IPv4'],
      ipFamilyPolicy: 'PreferDualStack',
      ports: [{ port: 443, protocol: 'TCP', targetPort: 8443 }],
      ...(o.loadBalancerIP ? { loadBalancerIP: o.loadBalancerIP } : {}),
    },
    status: { loadBalancer: { ingress: [{ ip: '2001:db8:400::1', ipMode: 'VIP' }] } },
  });

describe('Service as flock reads it', () => {
  it('keeps every field it does not read', () => {
    const svc = service();
    expect(svc.spec?.ports?.[0]).toEqual({ port: 443, protocol: 'TCP', targetPort: 8443 });
    expect(svc.status?.loadBalancer?.ingress).toEqual([{ ip: '2001:db8:400::1', ipMode: 'VIP' }]);
  });

  it('takes the sharing key from the annotation, else Service/<name>', () => {
    expect(serviceSharingKey(service())).toEqual({ ok: true, value: 'Service/web' });
    expect(
      serviceSharingKey(service({ annotations: { [SHARING_KEY_ANNOTATION]: ' shared-1 ' } })),
    ).toEqual({ ok: true, value: 'shared-1' });
    expect(
      serviceSharingKey(service({ annotations: { [SHARING_KEY_ANNOTATION]: 'a b' } })).ok,
    ).toBe(false);
  });

  it('asks for the annotated addresses, else spec.loadBalancerIP', () => {
    expect(requestedServiceAddresses(service())).toBeUndefined();
    expect(requestedServiceAddresses(service({ loadBalancerIP: '192.0.2.9' }))).toEqual({
      ok: true,
      value: [{ ip: '192.0.2.9', family: 4 }],
    });
    const both = service({
      loadBalancerIP: '192.0.2.9',
      annotations: { [LOAD_BALANCER_IPS_ANNOTATION]: '2001:db8:400::5, 198.51.100.70' },
    });
    expect(requestedServiceAddresses(both)).toEqual({
      ok: true,
      value: [
        { ip: '2001:db8:400::5', family: 6 },
        { ip: '198.51.100.70', family: 4 },
      ],
    });
  });

  it('refuses two addresses of one family and things that are not addresses', () => {
    expect(parseLoadBalancerIps('192.0.2.1,192.0.2.2')).toEqual({
      ok: false,
      error: 'load-balancer-ips: more than one IPv4 address',
    });
    expect(parseLoadBalancerIps('web.example')?.ok).toBe(false);
    expect(parseLoadBalancerIps(' ')).toBeUndefined();
  });
});
