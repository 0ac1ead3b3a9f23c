import { FakeApiServer } from '@flock/kube/testing';
import { NODES } from '@flock/kube';
import { silentLogger } from '@flock/api';
import { nodeConfig } from '@flock/api/testing';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BgpPeers } from './bgp-peers.js';
import {
  chooseRouterId,
  fallbackRouterId,
  readNodeAddresses,
  type NodeObject,
  type NodeView,
} from './router-id.js';

const internal = (address: string) => ({ type: 'InternalIP', address });

describe('router ID', () => {
  it('takes the flag, then spec.bgp.routerID, then the first IPv4 InternalIP, then the fallback', () => {
    const nodeAddresses = [
      { type: 'Hostname', address: 'node-a' },
      internal('2001:db8::10'),
      { type: 'ExternalIP', address: '203.0.113.9' },
      internal('10.0.0.10'),
      internal('10.0.0.11'),
    ];
    const base = { nodeName: 'node-a', nodeAddresses };
    expect(chooseRouterId({ ...base, override: '10.9.9.9', specRouterId: '10.1.1.1' })).toEqual({
      routerId: '10.9.9.9',
      source: 'flag',
    });
    expect(chooseRouterId({ ...base, specRouterId: '10.1.1.1' })).toEqual({
      routerId: '10.1.1.1',
      source: 'nodeconfig',
    });
    expect(chooseRouterId(base)).toEqual({ routerId: '10.0.0.10', source: 'node-internal-ip' });
    expect(
      chooseRouterId({ nodeName: 'node-a', nodeAddresses: [internal('2001:db8::10')] }),
    ).toEqual({ routerId: fallbackRouterId('node-a'), source: 'fallback' });
  });

  it('the fallback is stable per name, inside 240.0.0.0/4 and never the broadcast address', () => {
    expect(fallbackRouterId('node-a')).toBe(fallbackRouterId('node-a'));
    expect(fallbackRouterId('node-a')).not.toBe(fallbackRouterId('node-b'));
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 253 }), (name) => {
        const id = fallbackRouterId(name);
        const octets = id.split('.').map(Number);
        expect(octets).toHaveLength(4);
        expect(octets[0]).toBeGreaterThanOrEqual(240);
        expect(octets.every((o) => Number.isInteger(o) && o >= 0 && o <= 255)).toBe(true);
        expect(id).not.toBe('255.255.255.255');
      }),
    );
  });

  it("reads the Node's addresses from the API server (none when the Node is missing)", async () => {
    const api = new FakeApiServer();
    expect(await readNodeAddresses(api, 'node-a')).toEqual([]);
    api.putObject(NODES, {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'node-a' },
      status: { addresses: [internal('10.0.0.10')] },
    });
    expect(await readNodeAddresses(api, 'node-a')).toEqual([internal('10.0.0.10')]);
  });

  it("takes the Node's addresses from its watch once synced; a GET only before", async () => {
    const api = new FakeApiServer();
    api.putObject(NODES, {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: 'node-a' },
      status: { addresses: [internal('10.0.0.10')] },
    });
    let synced = false;
    let node: NodeObject | undefined;
    const view: NodeView = {
      get hasSynced() {
        return synced;
      },
      getObject: () => node,
      addHandler: () => () => {},
    };
    const bgp = new BgpPeers({
      nodeName: 'node-a',
      transport: api,
      node: view,
      logger: silentLogger,
      secretNamespace: 'flock-system',
    });
    const gets = () => api.requests.filter((r) => r.path === '/api/v1/nodes/node-a').length;
    const spec = nodeConfig().spec;
    await bgp.refresh(spec);
    expect([bgp.routerId?.routerId, gets()]).toEqual(['10.0.0.10', 1]);
    synced = true;
    node = { metadata: { name: 'node-a' }, status: { addresses: [internal('10.0.0.20')] } };
    await bgp.refresh(spec);
    await bgp.refresh(spec);
    expect([bgp.routerId?.routerId, gets()]).toEqual(['10.0.0.20', 1]);
    // The watch shows no Node: no addresses, as a GET answering 404.
    node = undefined;
    await bgp.refresh(spec);
    expect([bgp.routerId, gets()]).toEqual([
      { routerId: fallbackRouterId('node-a'), source: 'fallback' },
      1,
    ]);
  });
});
