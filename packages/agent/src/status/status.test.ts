// `flock-agent status` against a running agent (FakeApiServer, FakeDatapath, FakeBird): what it
// prints as JSON and as text, the socket's permissions, and an answer that is not a status.
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentRequest } from '@flock/api';
import { pod } from '@flock/api/testing';
import { PODS } from '@flock/kube';
import { createMemoryLogger, type FakeApiServer } from '@flock/kube/testing';
import { NftApplier } from '@flock/netpol';
import { eventually } from '@flock/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../agent.js';
import { FakeDatapath } from '../../testing/datapath/fake.js';
import { RecordingNft } from '../../testing/policy.js';
import { testAgentConfig } from '../../testing/agent-config.js';
import { routingApiServer } from '../../testing/routing-api.js';
import { FakeBird } from '../../testing/fake-bird.js';
import { statusCommand } from './command.js';
import { formatDuration, formatStatus } from './format.js';
import { AgentStatus } from './snapshot.js';

let dir: string;
let api: FakeApiServer;
let datapath: FakeDatapath;
let bird: FakeBird;
let agent: RunningAgent | undefined;

function capture() {
  const out = { stdout: '', stderr: '' };
  return {
    out,
    io: {
      stdout: { write: (s: string) => (out.stdout += s) },
      stderr: { write: (s: string) => (out.stderr += s) },
    },
  };
}

async function add(name: string, annotations: Record<string, string>): Promise<void> {
  const uid = api.putObject(PODS, pod({ name, annotations })).metadata.uid;
  const request: AgentRequest = {
    command: 'ADD',
    containerID: `c-${name}`,
    ifName: 'eth0',
    netns: datapath.createNetns(`/var/run/netns/${name}`),
    args: { K8S_POD_NAMESPACE: 'default', K8S_POD_NAME: name, K8S_POD_UID: uid },
    config: { cniVersion: '1.1.0', name: 'flock', type: 'flock' },
  };
  const r = await agent!.handlers.handle(request);
  if (!r.ok) throw new Error(r.error.msg);
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flock-status-'));
  api = routingApiServer();
  datapath = new FakeDatapath();
  bird = new FakeBird(join(dir, 'bird.conf'));
  agent = await startAgent({
    config: testAgentConfig(dir, {
      birdConfigPath: bird.configPath,
      anycastPeriodMs: '100ms',
      bgpStatusPeriodMs: '100ms',
    }),
    transport: api,
    datapath,
    logger: createMemoryLogger(),
    bird: { reload: bird, status: bird },
    policyApplier: new NftApplier(new RecordingNft().run),
    processMetrics: false,
  });
});
afterEach(async () => {
  await agent?.stop();
  agent = undefined;
  await rm(dir, { recursive: true, force: true });
});

describe('flock-agent status', () => {
  it('shows peers, routes exported, pinned and anycast addresses, allocations, policy (JSON and text)', async () => {
    const socket = join(dir, 'run', 'status.sock');
    expect((await stat(socket)).mode & 0o777).toBe(0o600);
    expect((await stat(join(dir, 'run'))).mode & 0o777).toBe(0o700);
    await eventually('bird.conf written', () => readFile(bird.configPath, 'utf8'));
    await bird.start();
    await add('pinned', { 'flock.fritzlab.net/pinned-ip': '2001:db8:200::7' });
    await add('any', { 'flock.fritzlab.net/anycast': '2001:db8:300::1' });
    const json = await eventually('everything exported', async () => {
      const { out, io } = capture();
      expect(
        await statusCommand(['--socket', join(dir, 'run', 'cni.sock'), '-o', 'json'], io),
      ).toBe(0);
      const s = AgentStatus.parse(JSON.parse(out.stdout));
      return s.routesExported?.anycast === 1 && s.peers[0]?.routesExported === 4 ? s : undefined;
    });
    expect(json).toMatchObject({
      node: 'node-a',
      ready: true,
      bird: { state: 'applied' },
      routesExported: { aggregate: 2, pinned: 1, anycast: 1 },
      announced: {
        aggregates: ['2001:db8:100::/64', '192.0.2.16/28'],
        pinned: ['2001:db8:200::7'],
        anycast: [{ address: '2001:db8:300::1', veths: [expect.stringMatching(/^flock/)] }],
      },
      policy: { enforced: true, ok: true, reason: 'Applied' },
    });
    expect(json.peers).toEqual([
      expect.objectContaining({
        address: '2001:db8:ffff::1',
        asn: 65000,
        state: 'Established',
        routesExported: 4,
        uptimeSeconds: expect.any(Number),
      }),
    ]);
    expect(
      json.allocations.map((a) => `${a.pod} ${a.pinned} ${a.anycast.join()} ${a.ipv4Mode}`).sort(),
    ).toEqual(['any false 2001:db8:300::1 public', 'pinned true  public']);
    expect(json.addresses.find((a) => a.family === 'ipv4')).toMatchObject({
      prefix: '192.0.2.16/28',
      used: 2,
    });

    const { out, io } = capture();
    expect(await statusCommand(['--status-socket', socket], io)).toBe(0);
    expect(out.stdout).toMatch(/^node node-a .* ready$/m);
    expect(out.stdout).toMatch(/^ {2}2001:db8:ffff::1 +65000 +Established +\S+s +4/m);
    expect(out.stdout).toContain('Routes exported: 2 aggregate, 1 pinned, 1 anycast');
    expect(out.stdout).toContain('anycast:    2001:db8:300::1 (1 pod)');
    expect(out.stdout).toMatch(
      /^ {2}default\/pinned +2001:db8:200::7 +192\.0\.2\.\d+ +public +pinned +committed$/m,
    );
    expect(out.stdout).toMatch(/^NetworkPolicy: applied \(Applied\)/m);
  });

  it('fails on an agent that is not there, on an answer that is not a status, and on bad flags', async () => {
    const { out, io } = capture();
    expect(await statusCommand(['--status-socket', join(dir, 'nothing.sock')], io)).toBe(1);
    expect(out.stderr).toMatch(/nothing\.sock: connect ENOENT/);

    const fake = join(dir, 'fake.sock');
    const server = createServer((_req, res) => res.end(JSON.stringify({ node: 'x' })));
    await new Promise<void>((r) => server.listen(fake, r));
    try {
      const c = capture();
      expect(await statusCommand(['--status-socket', fake], c.io)).toBe(1);
      expect(c.out.stderr).toMatch(/not a status/);
    } finally {
      server.close();
    }
    const bad = capture();
    expect(await statusCommand(['--output', 'yaml'], bad.io)).toBe(2);
    expect(bad.out.stderr).toMatch(/--output must be text or json/);
  });
});

describe('formatDuration', () => {
  it('days, hours, minutes and seconds', () => {
    expect(formatDuration(5)).toBe('5s');
    expect(formatDuration(3725)).toBe('1h2m5s');
    expect(formatDuration(90_061)).toBe('1d1h1m1s');
  });
});

/** A status of an idle node, with `extra` on top. */
const quietStatus = (extra: object) =>
  AgentStatus.parse({
    node: 'node-a',
    ready: true,
    bird: { state: 'applied' },
    peers: [],
    announced: { aggregates: [], pinned: [], anycast: [] },
    addresses: [],
    allocations: [],
    policy: { enforced: false, passes: 0 },
    ...extra,
  });

describe('the text form', () => {
  it("shows the node's NAT64 translator, and says when Tayga is not running", () => {
    const nat64 = { prefix: '64:ff9b::/96', pool: '192.168.240.0/20', running: true, restarts: 2 };
    const status = quietStatus({ nat64 });
    expect(formatStatus(status)).toContain(
      'NAT64: 64:ff9b::/96 from 192.168.240.0/20, Tayga running (2 restarts)',
    );
    expect(formatStatus({ ...status, nat64: { ...nat64, running: false } })).toContain(
      'Tayga NOT RUNNING',
    );
    expect(formatStatus({ ...status, nat64: undefined })).not.toContain('NAT64');
  });

  it("shows a Private pool's inter-node translator: its prefix and this node's part", () => {
    const interNode = {
      prefix: 'fd12:3456:789a:4::/96',
      announced: 'fd12:3456:789a:4::a14:300/120',
      running: false,
      restarts: 0,
    };
    expect(formatStatus(quietStatus({ interNode }))).toContain(
      'Private IPv4 between nodes: fd12:3456:789a:4::/96, this node fd12:3456:789a:4::a14:300/120, Tayga NOT RUNNING (0 restarts)',
    );
    expect(formatStatus(quietStatus({}))).not.toContain('between nodes');
  });

  it('lists the floating addresses local pods ask for and do not hold', () => {
    const status = quietStatus({
      claimConflicts: [
        {
          address: '2001:db8:200::7',
          namespace: 'default',
          pod: 'second',
          why: 'pinned address 2001:db8:200::7: it is held by pod first',
        },
      ],
    });
    expect(formatStatus(status)).toContain(
      'Floating addresses not held (neither announced nor sourced here):\n' +
        '  ADDRESS          POD             WHY\n' +
        '  2001:db8:200::7  default/second  pinned address 2001:db8:200::7: it is held by pod first',
    );
  });
});
