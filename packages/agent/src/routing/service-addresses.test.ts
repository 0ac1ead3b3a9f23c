import { ADDRESSCLAIM_KIND, API_VERSION, claimName, type AddressClaim } from '@flock/api';
import { nodeConfig } from '@flock/api/testing';
import { describe, expect, it } from 'vitest';
import {
  claimedServiceAddresses,
  planServiceAddresses,
  type ServiceView,
} from './service-addresses.js';

const spec = nodeConfig({
  spec: { serviceCIDRs: ['2001:db8:400::/120', '203.0.113.64/28'] },
}).spec;

const service = (name: string, addresses: string[], local = false): ServiceView => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { namespace: 'shop', name },
  localTraffic: local,
  addresses,
});

/** Both steps, as the agent's announcement pass runs them. */
function plan(input: {
  spec: typeof spec;
  services: ServiceView[];
  readyHere: (namespace: string, name: string) => number;
  claimOf: ReturnType<typeof claims>;
}) {
  const { claimed, warnings } = claimedServiceAddresses(input);
  return { addresses: planServiceAddresses({ claimed, readyHere: input.readyHere }), warnings };
}

function claims(...list: [address: string, namespace: string, services: string[]][]) {
  const byAddress = new Map<string, AddressClaim>(
    list.map(([address, namespace, services]) => [
      address,
      {
        apiVersion: API_VERSION,
        kind: ADDRESSCLAIM_KIND,
        metadata: { name: claimName(address) },
        spec: {
          address,
          kind: 'Service',
          namespace,
          key: `Service/${services[0]}`,
          holders: [],
          services,
        },
      },
    ]),
  );
  return (address: string) => byAddress.get(address);
}

describe('Service addresses a node announces', () => {
  it('Cluster: from every node with the range; Local: only with a ready endpoint here', () => {
    const result = plan({
      spec,
      services: [
        service('web', ['2001:db8:400::1', '203.0.113.65']),
        service('api', ['2001:db8:400::2'], true),
        service('idle', ['2001:db8:400::3'], true),
      ],
      readyHere: (_ns, name) => (name === 'api' ? 2 : 0),
      claimOf: claims(
        ['2001:db8:400::1', 'shop', ['web']],
        ['203.0.113.65', 'shop', ['web']],
        ['2001:db8:400::2', 'shop', ['api']],
        ['2001:db8:400::3', 'shop', ['idle']],
      ),
    });
    expect([...result.addresses]).toEqual([
      ['2001:db8:400::1', { service: 'shop/web', why: 'externalTrafficPolicy Cluster' }],
      [
        '2001:db8:400::2',
        { service: 'shop/api', why: 'externalTrafficPolicy Local: 2 ready endpoints here' },
      ],
      ['203.0.113.65', { service: 'shop/web', why: 'externalTrafficPolicy Cluster' }],
    ]);
    expect(result.warnings).toEqual([]);
  });

  it('announces nothing outside the ranges, nothing not claimed for the Service (external IPs included)', () => {
    const result = plan({
      spec,
      services: [
        service('web', ['2001:db8:400::1', '2001:db8:999::1']),
        service('thief', ['2001:db8:400::9']),
        service('squatter', ['2001:db8:400::1']),
      ],
      readyHere: () => 1,
      claimOf: claims(
        ['2001:db8:400::1', 'shop', ['web']],
        ['2001:db8:400::9', 'other', ['thief']],
      ),
    });
    expect([...result.addresses.keys()]).toEqual(['2001:db8:400::1']);
    expect(result.addresses.get('2001:db8:400::1')?.service).toBe('shop/web');
    expect(result.warnings).toEqual([
      'Service address 2001:db8:400::1 of shop/squatter is not claimed for it',
      'Service address 2001:db8:400::9 of shop/thief is not claimed for it',
    ]);
  });

  it('a node without Service ranges announces none', () => {
    const result = plan({
      spec: nodeConfig().spec,
      services: [service('web', ['2001:db8:400::1'])],
      readyHere: () => 1,
      claimOf: claims(['2001:db8:400::1', 'shop', ['web']]),
    });
    expect(result.addresses.size).toBe(0);
  });
});
