import { silentLogger } from '@flock/api';
import { NODES } from '@flock/kube';
import { FakeApiServer } from '@flock/kube/testing';
import { eventually } from '@flock/testkit';
import type { V1Node, V1NodeCondition } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import { NetworkConditionKeeper } from './node-condition.js';

const T0 = '2026-11-01T10:00:00Z';
let keeper: NetworkConditionKeeper | undefined;
afterEach(() => keeper?.stop());

type Condition = Omit<Partial<V1NodeCondition>, 'lastTransitionTime'> & {
  lastTransitionTime?: string;
};

/** A Node whose NetworkUnavailable condition is `condition`, and a keeper ticking every 20 ms. */
function start(condition: Condition) {
  const api = new FakeApiServer();
  api.putObject(NODES, {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: 'node-a' },
    status: { conditions: [{ type: 'NetworkUnavailable', ...condition }] },
  } as never);
  keeper = new NetworkConditionKeeper(api, 'node-a', silentLogger, 20);
  keeper.start();
  const writes = () =>
    api.requests.filter((r) => r.method === 'PATCH' && r.path.endsWith('/nodes/node-a/status'));
  const current = () =>
    api
      .getObject<V1Node>(NODES, 'node-a')
      ?.status?.conditions?.find((c) => c.type === 'NetworkUnavailable') as
      (V1NodeCondition & { lastTransitionTime?: string }) | undefined;
  return { writes, condition: current };
}

const settle = () => new Promise((r) => setTimeout(r, 200)); // ten periods

describe('NetworkConditionKeeper', () => {
  it('writes nothing while the condition is already False/FlockReady, whatever the ticks', async () => {
    const node = start({ status: 'False', reason: 'FlockReady', lastTransitionTime: T0 });
    await settle();
    expect(node.writes()).toEqual([]);
    expect(node.condition()?.lastTransitionTime).toBe(T0);
  });

  it('sets it once when it is True, with the time of that transition, and then leaves it', async () => {
    const before = Date.now() - 1000;
    const node = start({ status: 'True', reason: 'NoRouteCreated', lastTransitionTime: T0 });
    await eventually('written', () => node.condition()?.reason === 'FlockReady');
    const since = node.condition()?.lastTransitionTime;
    expect(Date.parse(since!)).toBeGreaterThanOrEqual(before);
    await settle();
    expect(node.writes()).toHaveLength(1);
    expect(node.condition()).toMatchObject({ status: 'False', lastTransitionTime: since });
  });

  it('takes over a False condition of another reason and keeps its transition time', async () => {
    const node = start({ status: 'False', reason: 'RouteCreated', lastTransitionTime: T0 });
    await eventually('written', () => node.condition()?.reason === 'FlockReady');
    await settle();
    expect(node.writes()).toHaveLength(1);
    expect(node.condition()).toMatchObject({ status: 'False', lastTransitionTime: T0 });
  });
});
