// The operator on the in-memory API server with a Pool of Service ranges and the namespaces
// shop and other: put Services, read back their status, claims, Events and the pool.
import { claimName, type AddressClaim, type Pool, type Service } from '@flock/api';
import { ADDRESSCLAIMS, EVENTS, NAMESPACES, POOLS, SERVICES } from '@flock/kube';
import { createMemoryLogger, FakeApiServer } from '@flock/kube/testing';
import { startOperator, type OperatorOptions } from '../src/operator.js';
import {
  claimSummary,
  ingressOf,
  namespaceObject,
  serviceObject,
  servicePool,
  type ServiceInput,
} from './services.js';

export type ServiceWorldOptions = Partial<OperatorOptions> & { pools?: object[] };

export interface ServiceEvent {
  reason: string;
  type: string;
  note: string;
  regarding: { name: string; namespace?: string };
}

export async function serviceWorld(o: ServiceWorldOptions = {}) {
  const server = new FakeApiServer();
  for (const p of o.pools ?? [servicePool('a')]) server.putObject(POOLS, p as Pool);
  for (const ns of ['shop', 'other']) server.putObject(NAMESPACES, namespaceObject(ns));
  const op = await startOperator({
    transport: server,
    logger: createMemoryLogger(),
    identity: 'op',
    leaderElect: false,
    processMetrics: false,
    ...o,
  });
  const svc = (name: string, ns = 'shop') => server.getObject<Service>(SERVICES, name, ns);
  return {
    server,
    op,
    put: (name: string, i: ServiceInput = {}) => server.putObject(SERVICES, serviceObject(name, i)),
    svc,
    ingress: (name: string, ns = 'shop') => ingressOf(svc(name, ns)),
    claim: (address: string) =>
      claimSummary(server.getObject<AddressClaim>(ADDRESSCLAIMS, claimName(address))),
    claims: () => server.listObjects<AddressClaim>(ADDRESSCLAIMS),
    events: (name: string, reason?: string) =>
      server
        .listObjects<ServiceEvent>(EVENTS)
        .filter((e) => e.regarding.name === name && (!reason || e.reason === reason)),
    pool: (name = 'a') => server.getObject<Pool>(POOLS, name),
  };
}
