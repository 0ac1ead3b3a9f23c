// The node's summary blackhole routes for real: the agent's start-up installs them in the node
// namespace, and its --resync loop puts back one that someone deleted. The agent runs in this
// process (FakeApiServer, FakeBird) with the real datapath in a test namespace. Needs root.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '@flock/api';
import { NODECONFIGS, NODES } from '@flock/kube';
import { FakeApiServer } from '@flock/kube/testing';
import { Netns, eventually, requireKernelTier } from '@flock/testkit';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../agent.js';
import { IprouteDatapath } from '../datapath/index.js';
import { testAgentConfig } from '../../testing/agent-config.js';
import { FakeBird } from '../../testing/fake-bird.js';
import { NODE_CONFIG } from '../../testing/routing-fixtures.js';

const RESYNC_MS = 500;
let dir: string | undefined;
let node: Netns | undefined;
let agent: RunningAgent | undefined;

/** The node namespace's blackhole routes, as "dst proto". */
async function blackholes(ns: Netns): Promise<string[]> {
  const routes = [];
  for (const family of ['-4', '-6']) {
    const out = await ns.exec('ip', ['-j', family, 'route', 'show', 'type', 'blackhole']);
    routes.push(...(JSON.parse(out.stdout) as { dst: string; protocol?: string }[]));
  }
  return routes.map((r) => `${r.dst} ${r.protocol ?? ''}`).sort();
}

describe('blackhole summary routes (kernel)', () => {
  beforeAll(() => requireKernelTier('nsenter'));
  afterEach(async () => {
    await agent?.stop();
    agent = undefined;
    await node?.destroy();
    node = undefined;
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('are installed at start-up and one that was deleted is back within --resync', async () => {
    dir = await mkdtemp(join(tmpdir(), 'flock-blackholes-'));
    node = await Netns.create('bhnode');
    const api = new FakeApiServer();
    api.putObject(NODES, { apiVersion: 'v1', kind: 'Node', metadata: { name: 'node-a' } });
    api.putObject(NODECONFIGS, NODE_CONFIG);
    const bird = new FakeBird(join(dir, 'bird.conf'));
    agent = await startAgent({
      config: testAgentConfig(dir, { resyncMs: RESYNC_MS }),
      transport: api,
      datapath: new IprouteDatapath({ hostNetns: node.path }),
      logger: silentLogger,
      bird: { reload: bird, status: bird },
    });
    const both = ['192.0.2.16/28 241', '2001:db8:100::/64 241'];
    expect(await blackholes(node)).toEqual(both);

    // Someone (a network script, an operator) deletes one.
    await node.exec('ip', ['-6', 'route', 'del', 'blackhole', '2001:db8:100::/64']);
    const deleted = Date.now();
    expect(await blackholes(node)).toEqual(['192.0.2.16/28 241']);
    await eventually(
      'put back',
      async () => JSON.stringify(await blackholes(node!)) === JSON.stringify(both),
      {
        timeoutMs: 5 * RESYNC_MS,
        intervalMs: 50,
      },
    );
    expect(Date.now() - deleted).toBeLessThanOrEqual(RESYNC_MS + 500);
  });
});
