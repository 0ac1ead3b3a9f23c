// Test infrastructure: the API server of the routing unit tests — node-a's Node
// (with the InternalIP the router ID comes from) and its NodeConfig.
import { NODECONFIGS, NODES } from '@flock/kube';
import { FakeApiServer } from '@flock/kube/testing';
import { NODE_CONFIG } from './routing-fixtures.js';

export function routingApiServer(): FakeApiServer {
  const api = new FakeApiServer();
  api.putObject(NODES, {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: 'node-a' },
    status: { addresses: [{ type: 'InternalIP', address: '10.0.0.10' }] },
  } as never);
  api.putObject(NODECONFIGS, NODE_CONFIG);
  return api;
}
