import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '@flock/api';
import { nodeConfig as buildNodeConfig, pod } from '@flock/api/testing';
import { NODECONFIGS, NODES, PODS } from '@flock/kube';
import { FakeApiServer } from '@flock/kube/testing';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from './agent.js';
import { AgentConfig } from './core/config.js';
import { hostVethName } from './datapath/index.js';
import { FakeDatapath } from '../testing/datapath/fake.js';

const nodeConfig = buildNodeConfig({ spec: { cidr4: '192.0.2.16/28' } });

const entry = (containerID: string, state: 'pending' | 'committed', ip6: string) => ({
  containerID,
  ifname: 'eth0',
  namespace: 'default',
  pod: containerID,
  podUID: `uid-${containerID}`,
  ip6,
  pinned: false,
  anycast: [],
  state,
  createdAt: '2026-11-29T10:00:00.000Z',
});

const later = (ms: number) => new Date(Date.now() + ms).toISOString();

let dir: string;
let api: FakeApiServer;
let datapath: FakeDatapath;
let agent: RunningAgent | undefined;

const config = (over: Partial<AgentConfig> = {}): AgentConfig =>
  AgentConfig.parse({
    nodeName: 'node-a',
    socketPath: join(dir, 'run', 'cni.sock'),
    storePath: join(dir, 'lib', 'allocations.json'),
    healthPort: 0,
    ...over,
  });

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flock-agent-'));
  api = new FakeApiServer();
  api.putObject(NODES, {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name: 'node-a' },
    status: {},
  });
  datapath = new FakeDatapath();
});
afterEach(async () => {
  await agent?.stop();
  agent = undefined;
  await rm(dir, { recursive: true, force: true });
});

describe('agent start-up', () => {
  it('re-marks committed allocations, drops pending ones, keeps the quarantine, installs blackholes, serves a root-only socket', async () => {
    api.putObject(NODECONFIGS, nodeConfig);
    const { mkdir } = await import('node:fs/promises');
    await mkdir(join(dir, 'lib'), { recursive: true });
    // The committed entry's pod still exists (else the orphan sweep would remove the entry).
    const kept = api.putObject(PODS, pod({ name: 'kept', uid: undefined, phase: undefined }));
    await writeFile(
      join(dir, 'lib', 'allocations.json'),
      JSON.stringify({
        version: 1,
        entries: [
          { ...entry('kept', 'committed', '2001:db8:100::5'), podUID: kept.metadata.uid },
          entry('half', 'pending', '2001:db8:100::6'),
          // A DEL that had written its first step (and the quarantine) when the run died.
          entry('deleting', 'pending', '2001:db8:100::9'),
        ],
        // Released by the previous run: one still in quarantine, one whose time is over.
        released: [
          { ip: '2001:db8:100::7', identity: 'default/gone', pinned: false, until: later(60_000) },
          { ip: '2001:db8:100::8', identity: 'default/old', pinned: false, until: later(-1) },
          { ip: '2001:db8:100::9', identity: 'default/deleting', pinned: false, until: later(9e4) },
        ],
      }),
    );
    // The committed pod's sandbox is there (else the sweep would find its veth gone).
    await datapath.setupPod({
      containerID: 'kept',
      ifName: 'eth0',
      netns: datapath.createNetns(),
      hostVeth: hostVethName('kept', 'eth0'),
      ip6: '2001:db8:100::5',
    });
    // The pending ADD had got as far as its veth when the previous run died.
    const netns = datapath.createNetns();
    await datapath.setupPod({
      containerID: 'half',
      ifName: 'eth0',
      netns,
      hostVeth: hostVethName('half', 'eth0'),
      ip6: '2001:db8:100::6',
    });

    agent = await startAgent({ config: config(), transport: api, datapath, logger: silentLogger });

    expect(agent.store.entries().map((e) => e.containerID)).toEqual(['kept']);
    const allocator = agent.nodeConfig.current()!.allocator;
    expect(allocator.ownerOf('2001:db8:100::5')).toBe('kept/eth0');
    expect(allocator.ownerOf('2001:db8:100::6')).toBeUndefined();
    // The restart keeps the quarantine (the half-done DEL's too); a pending ADD's address was
    // never the pod's: free at once.
    expect(allocator.isQuarantined('2001:db8:100::7')).toBe(true);
    expect(allocator.isQuarantined('2001:db8:100::9')).toBe(true);
    expect(allocator.isQuarantined('2001:db8:100::8')).toBe(false);
    expect(allocator.isQuarantined('2001:db8:100::6')).toBe(false);
    expect(agent.store.released().map((r) => r.ip)).toEqual(['2001:db8:100::7', '2001:db8:100::9']);
    expect(datapath.hostState().links.map((l) => l.name)).not.toContain(
      hostVethName('half', 'eth0'),
    );
    const blackholes = datapath
      .hostState()
      .routes.filter((r) => r.type === 'blackhole')
      .map((r) => r.dst)
      .sort();
    expect(blackholes).toEqual(['192.0.2.16/28', '2001:db8:100::/64']);
    expect((await stat(join(dir, 'run', 'cni.sock'))).mode & 0o777).toBe(0o600);
    expect(agent.handlers.status()).toEqual({ ok: true });
  });

  it('waits for the NodeConfig and gives up with a clear message after the bound', async () => {
    await expect(
      startAgent({
        config: config({ nodeConfigTimeoutMs: 300 }),
        transport: api,
        datapath,
        logger: silentLogger,
      }),
    ).rejects.toThrow(/no NodeConfig node-a after .* does a Pool select this node/);
  });

  it('starts once the NodeConfig appears while it waits', async () => {
    const starting = startAgent({
      config: config(),
      transport: api,
      datapath,
      logger: silentLogger,
    });
    await new Promise((r) => setTimeout(r, 300));
    api.putObject(NODECONFIGS, nodeConfig);
    agent = await starting;
    expect(agent.nodeConfig.current()?.nodeConfig.spec.cidr6).toBe('2001:db8:100::/64');
  });

  it('refuses a corrupt store rather than starting empty', async () => {
    api.putObject(NODECONFIGS, nodeConfig);
    const { mkdir } = await import('node:fs/promises');
    await mkdir(join(dir, 'lib'), { recursive: true });
    await writeFile(join(dir, 'lib', 'allocations.json'), '{"version": 1, "entries": [');
    await expect(
      startAgent({ config: config(), transport: api, datapath, logger: silentLogger }),
    ).rejects.toThrow(/allocations\.json/);
  });
});
