import { silentLogger } from '@flock/api';
import { nodeConfig } from '@flock/api/testing';
import { NODECONFIGS } from '@flock/kube';
import { FakeApiServer } from '@flock/kube/testing';
import { eventually } from '@flock/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { NodeConfigTracker, nodeConfigEvents } from './node-config.js';

let tracker: NodeConfigTracker | undefined;
afterEach(async () => {
  await tracker?.stop();
  tracker = undefined;
});

function start(api: FakeApiServer, held: Set<string>) {
  tracker = new NodeConfigTracker({
    transport: api,
    nodeName: 'node-a',
    logger: silentLogger,
    addressQuarantineMs: 0,
    held: (owner) => held.has(owner),
  });
  tracker.start();
  return tracker;
}

const allocate = (t: NodeConfigTracker, owner: string) => {
  const r = t.current()!.allocator.allocate({
    owner,
    namespace: 'default',
    name: owner,
    algo: 'sequential',
  });
  if (!r.ok) throw new Error(r.error.message);
  return r.value.ip6;
};

describe('NodeConfigTracker', () => {
  it('a NodeConfig deleted and re-created keeps the addresses running pods hold', async () => {
    const api = new FakeApiServer();
    api.putObject(NODECONFIGS, nodeConfig());
    const held = new Set(['c1/eth0', 'c2/eth0']);
    const t = start(api, held);
    await t.waitForNodeConfig(5_000);
    const first = allocate(t, 'c1/eth0');
    allocate(t, 'c2/eth0');

    api.deleteObject(NODECONFIGS, 'node-a');
    await eventually('gone', () => t.current() === undefined);
    held.delete('c2/eth0'); // its pod was deleted (CNI DEL) while the NodeConfig was gone
    api.putObject(NODECONFIGS, nodeConfig());
    await eventually('back', () => t.current() !== undefined);

    expect(
      t
        .current()!
        .allocator.allocations()
        .map((a) => a.owner),
    ).toEqual(['c1/eth0']);
    const next = allocate(t, 'c3/eth0');
    expect(next).not.toBe(first);
  });

  it('keeps every allocation when the allocation store cannot be asked', async () => {
    const api = new FakeApiServer();
    api.putObject(NODECONFIGS, nodeConfig());
    tracker = new NodeConfigTracker({
      transport: api,
      nodeName: 'node-a',
      logger: silentLogger,
      addressQuarantineMs: 0,
      held: () => {
        throw new Error('store not loaded');
      },
    });
    tracker.start();
    const t = tracker;
    await t.waitForNodeConfig(5_000);
    allocate(t, 'c1/eth0');
    api.deleteObject(NODECONFIGS, 'node-a');
    await eventually('gone', () => t.current() === undefined);
    api.putObject(NODECONFIGS, nodeConfig({ spec: { cidr4: '192.0.2.16/28' } }));
    await eventually('back', () => t.current() !== undefined);
    expect(
      t
        .current()!
        .allocator.allocations()
        .map((a) => a.owner),
    ).toEqual(['c1/eth0']);
  });

  it('puts a Warning Event on the Node when the NodeConfig goes, a Normal one when it is back', () => {
    const events: string[] = [];
    const changed = nodeConfigEvents(
      {
        event: async (subject, e) => {
          events.push(`${subject.kind}/${subject.metadata.name} ${e.type} ${e.reason}`);
        },
      },
      'node-a',
    );
    changed(undefined); // still waiting at start-up: nothing to say
    changed(nodeConfig());
    changed(nodeConfig()); // a status update
    expect(events).toEqual([]);
    changed(undefined);
    changed(nodeConfig());
    expect(events).toEqual([
      'Node/node-a Warning NodeConfigMissing',
      'Node/node-a Normal NodeConfigRestored',
    ]);
  });
});
