// The agent's metrics move on real events: CNI requests through the real socket, BIRD reloads
// and sessions on FakeBird, a pinned ADD until BIRD runs its route, NetworkPolicy passes on a
// recording nft, the orphan sweep, addresses and quarantine, cache and loop metrics.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AgentRequest } from '@flock/api';
import { pod } from '@flock/api/testing';
import { run } from '@flock/exec';
import { PODS } from '@flock/kube';
import { createMemoryLogger, type FakeApiServer } from '@flock/kube/testing';
import { NftApplier } from '@flock/netpol';
import { eventually } from '@flock/testkit';
import { Registry } from 'prom-client';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startAgent, type RunningAgent } from '../agent.js';
import { rawExchange } from '../../testing/cni-server.js';
import { hostVethName } from '../datapath/index.js';
import { FakeDatapath } from '../../testing/datapath/fake.js';
import { secondsSince } from './metrics.js';
import { RecordingNft } from '../../testing/policy.js';
import { testAgentConfig } from '../../testing/agent-config.js';
import { routingApiServer } from '../../testing/routing-api.js';
import { FakeBird } from '../../testing/fake-bird.js';

let dir: string;
let api: FakeApiServer;
let datapath: FakeDatapath;
let bird: FakeBird;
let nft: RecordingNft;
let registry: Registry;
let agent: RunningAgent | undefined;
/** What `nft -j list table inet flock` prints (the drop counters' input). */
let listing = '{"nftables": []}';

/** The value of one series ('' labels: the metric without labels); undefined when absent. */
async function value(
  name: string,
  labels: Record<string, string> = {},
): Promise<number | undefined> {
  // A histogram's _count and _sum are series of the metric without the suffix.
  const metric =
    registry.getSingleMetric(name) ?? registry.getSingleMetric(name.replace(/_(count|sum)$/, ''));
  if (!metric) throw new Error(`no metric ${name}`);
  const { values } = await metric.get();
  const hit = values.find(
    (v) =>
      Object.entries(labels).every(([k, l]) => String(v.labels[k]) === l) &&
      ((v as { metricName?: string }).metricName ?? name) === name,
  );
  return hit?.value;
}

function request(name: string, uid: string, command: 'ADD' | 'DEL' = 'ADD'): AgentRequest {
  return {
    command,
    containerID: `c-${name}`,
    ifName: 'eth0',
    netns: datapath.createNetns(`/var/run/netns/${name}`),
    args: { K8S_POD_NAMESPACE: 'default', K8S_POD_NAME: name, K8S_POD_UID: uid },
    config: { cniVersion: '1.1.0', name: 'flock', type: 'flock' },
  };
}

function putPod(name: string, annotations?: Record<string, string>): string {
  return api.putObject(PODS, pod({ name, annotations })).metadata.uid;
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'flock-metrics-'));
  api = routingApiServer();
  datapath = new FakeDatapath();
  bird = new FakeBird(join(dir, 'bird.conf'));
  nft = new RecordingNft();
  registry = new Registry();
  agent = await startAgent({
    config: testAgentConfig(dir, {
      birdConfigPath: bird.configPath,
      orphanGraceMs: '100ms',
      sweepPeriodMs: '300ms',
      anycastPeriodMs: '100ms',
      bgpStatusPeriodMs: '100ms',
      addressQuarantineMs: '10m',
    }),
    transport: api,
    datapath,
    logger: createMemoryLogger(),
    bird: { reload: bird, status: bird },
    policyApplier: new NftApplier(nft.run),
    policyListing: () => Promise.resolve(listing),
    registry,
    processMetrics: false,
  });
});
afterEach(async () => {
  await agent?.stop();
  agent = undefined;
  await rm(dir, { recursive: true, force: true });
});

describe('agent metrics', () => {
  it(
    'BIRD reloads by result, session state and uptime, routes exported per class',
    { timeout: 30_000 },
    async () => {
      await eventually('a reload found BIRD down', async () =>
        ((await value('flock_agent_bird_reloads_total', { result: 'unreachable' })) ?? 0) > 0
          ? true
          : undefined,
      );
      expect(await value('flock_agent_bird_state', { state: 'unreachable' })).toBe(1);
      expect(await value('flock_agent_routes_exported', { class: 'aggregate' })).toBeUndefined();
      await eventually('bird.conf written', () => readFile(bird.configPath, 'utf8'));
      await bird.start();
      await eventually('BIRD runs the model', async () =>
        (await value('flock_agent_bird_reloads_total', { result: 'ok' })) === 1 ? true : undefined,
      );
      expect(await value('flock_agent_bird_state', { state: 'applied' })).toBe(1);
      expect(await value('flock_agent_bird_state', { state: 'unreachable' })).toBeUndefined();
      expect(await value('flock_agent_routes_exported', { class: 'aggregate' })).toBe(2);
      expect(await value('flock_agent_routes_exported', { class: 'pinned' })).toBe(0);
      const peer = { peer: '2001:db8:ffff::1' };
      await eventually('the session seen', async () =>
        (await value('flock_agent_bgp_session_up', peer)) === 1 ? true : undefined,
      );
      expect(await value('flock_agent_bgp_session_state', { ...peer, state: 'Established' })).toBe(
        1,
      );
      // FakeBird says the session came up at 2026-11-29 10:00:00 (local time).
      expect(await value('flock_agent_bgp_session_uptime_seconds', peer)).toBeGreaterThan(0);
      expect(await value('flock_agent_bgp_peer_routes_exported', peer)).toBe(2);

      bird.bgpStates.set('peer_2001_db8_ffff__1', 'Active');
      await eventually('the session down', async () =>
        (await value('flock_agent_bgp_session_up', peer)) === 0 ? true : undefined,
      );
      expect(await value('flock_agent_bgp_session_state', { ...peer, state: 'Active' })).toBe(1);
      expect(await value('flock_agent_bgp_session_state', { ...peer, state: 'Established' })).toBe(
        undefined,
      );
      expect(await value('flock_agent_bgp_session_uptime_seconds', peer)).toBe(0);

      bird.failConfigure = new Error('socket hung up');
      const x = putPod('x', { 'flock.fritzlab.net/pinned-ip': '2001:db8:200::8' });
      await rawExchange(join(dir, 'run', 'cni.sock'), JSON.stringify(request('x', x)));
      await eventually('a failed reload counted', async () =>
        ((await value('flock_agent_bird_reloads_total', { result: 'error' })) ?? 0) > 0
          ? true
          : undefined,
      );
    },
  );

  it('CNI requests by command and result; a pinned ADD until BIRD exports it; addresses and quarantine', async () => {
    await eventually('bird.conf written', () => readFile(bird.configPath, 'utf8'));
    await bird.start();
    await eventually('BIRD runs the first model', async () =>
      (await value('flock_agent_routes_exported', { class: 'aggregate' })) === 2 ? true : undefined,
    );
    const socket = join(dir, 'run', 'cni.sock');
    // The series exist at 0 before the first ADD (else rate() would never see that first one).
    expect(await value('flock_agent_add_to_export_seconds_count', { class: 'pinned' })).toBe(0);
    expect(await value('flock_agent_add_to_export_seconds_count', { class: 'anycast' })).toBe(0);
    const uid = putPod('p', { 'flock.fritzlab.net/pinned-ip': '2001:db8:200::7' });
    const reply = JSON.parse(await rawExchange(socket, JSON.stringify(request('p', uid)))) as {
      ok: boolean;
    };
    expect(reply.ok).toBe(true);
    expect(await value('flock_agent_cni_requests_total', { command: 'ADD', result: 'ok' })).toBe(1);
    expect(
      await value('flock_agent_cni_duration_seconds_count', { command: 'ADD', result: 'ok' }),
    ).toBe(1);
    await eventually('the pinned route exported', async () =>
      (await value('flock_agent_routes_exported', { class: 'pinned' })) === 1 ? true : undefined,
    );
    expect(await value('flock_agent_add_to_export_seconds_count', { class: 'pinned' })).toBe(1);
    expect(await value('flock_agent_add_to_export_seconds_sum', { class: 'pinned' })).toBeLessThan(
      10,
    );
    // The pinned address is not of this node's prefix; an ordinary pod's are.
    expect(await value('flock_agent_addresses', { family: 'ipv6', state: 'used' })).toBe(0);
    const n = putPod('n');
    await rawExchange(socket, JSON.stringify(request('n', n)));
    expect(await value('flock_agent_addresses', { family: 'ipv6', state: 'used' })).toBe(1);
    // Both pods hold an IPv4 address of the node (the pinned one pins only its IPv6).
    expect(await value('flock_agent_addresses', { family: 'ipv4', state: 'used' })).toBe(2);
    // What the allocator counts as free (the /28 less reserved addresses and the one in use).
    const free4 = await value('flock_agent_addresses', { family: 'ipv4', state: 'free' });
    expect(free4).toBe(Number(agent!.nodeConfig.current()!.allocator.counts().ipv4!.free));
    expect(free4).toBeGreaterThan(0);

    // A request the agent refuses: counted as an error with its CNI code.
    const bad = JSON.parse(
      await rawExchange(socket, JSON.stringify(request('nobody', 'no-such-uid'))),
    ) as { ok: boolean; error?: { code: number } };
    expect(bad.ok).toBe(false);
    expect(await value('flock_agent_cni_requests_total', { command: 'ADD', result: 'error' })).toBe(
      1,
    );
    expect(
      await value('flock_agent_cni_errors_total', {
        command: 'ADD',
        code: String(bad.error!.code),
      }),
    ).toBe(1);

    await rawExchange(socket, JSON.stringify(request('n', n, 'DEL')));
    expect(await value('flock_agent_cni_requests_total', { command: 'DEL', result: 'ok' })).toBe(1);
    expect(await value('flock_agent_addresses', { family: 'ipv6', state: 'used' })).toBe(0);
    expect(await value('flock_agent_addresses', { family: 'ipv6', state: 'quarantined' })).toBe(1);
    // One namespace's release within its share of the /64: no quarantine cut short.
    expect(await value('flock_agent_address_quarantine_cut_total', { family: 'ipv6' })).toBe(0);
  });

  it('NetworkPolicy pass durations and nft apply errors; the policy gauges', async () => {
    await eventually('a first pass', async () =>
      (await value('flock_agent_policy_applied')) === 1 ? true : undefined,
    );
    expect(
      await value('flock_agent_policy_pass_duration_seconds_count', { result: 'ok' }),
    ).toBeGreaterThan(0);
    expect(await value('flock_agent_policy_apply_errors_total', { reason: 'ApplyFailed' })).toBe(0);
    nft.failWith = new Error('nft: Error: Could not process rule: No buffer space available');
    await agent!.policy!.resync();
    expect(await value('flock_agent_policy_apply_errors_total', { reason: 'ApplyFailed' })).toBe(1);
    expect(await value('flock_agent_policy_pass_duration_seconds_count', { result: 'error' })).toBe(
      1,
    );
    expect(await value('flock_agent_policy_applied')).toBe(0);
    expect(await value('flock_agent_loop_runs_total', { loop: 'policy', result: 'error' })).toBe(1);
    nft.failWith = undefined;
    await agent!.policy!.resync();
    expect(await value('flock_agent_policy_applied')).toBe(1);
  });

  it('programs the agent ran, by program, as @flock/exec counts them', async () => {
    const before = (await value('flock_agent_commands_total', { program: 'true' })) ?? 0;
    await run('true', []);
    await run('true', []);
    expect(await value('flock_agent_commands_total', { program: 'true' })).toBe(before + 2);
  });

  it('packets NetworkPolicy dropped, per pod and direction, from the kernel counters', async () => {
    const uid = putPod('d');
    await rawExchange(join(dir, 'run', 'cni.sock'), JSON.stringify(request('d', uid)));
    const chain = `ingress_${hostVethName('c-d', 'eth0')}`;
    const rule = (packets: number) => ({
      rule: { chain, expr: [{ counter: { packets, bytes: 0 } }, { drop: null }] },
    });
    const labels = { namespace: 'default', pod: 'd', direction: 'ingress' };
    listing = JSON.stringify({ nftables: [rule(3)] });
    expect(await value('flock_agent_policy_dropped_packets_total', labels)).toBe(3);
    // A scrape within a second reuses the last listing (one nft run per second at most).
    listing = JSON.stringify({ nftables: [rule(1)] }); // the chain was replaced meanwhile
    expect(await value('flock_agent_policy_dropped_packets_total', labels)).toBe(3);
    // Past the second: a timer may fire early by the event loop's cached time, so with margin.
    await new Promise((r) => setTimeout(r, 1_300));
    expect(await value('flock_agent_policy_dropped_packets_total', labels)).toBe(4);
  });

  it('orphan sweep removals, cache and loop metrics', async () => {
    bird.up = true;
    const socket = join(dir, 'run', 'cni.sock');
    const uid = putPod('gone');
    await rawExchange(socket, JSON.stringify(request('gone', uid)));
    // One pod cache, cluster-wide: the node side and NetworkPolicy share it.
    await eventually('the pod cache holds the pod', async () =>
      (await value('flock_agent_cache_objects', { cache: 'pods' })) === 1 ? true : undefined,
    );
    expect(await value('flock_agent_cache_objects', { cache: 'nodeconfig' })).toBe(1);
    // Deleted from the API server without a DEL: the sweep tears it down.
    api.deleteObject(PODS, 'gone', 'default');
    await eventually('the sweep removed it', async () =>
      ((await value('flock_agent_orphan_sweep_removals_total')) ?? 0) === 1 ? true : undefined,
    );
    expect(agent!.store.entries()).toEqual([]);
    await eventually('a status write', async () =>
      ((await value('flock_agent_loop_runs_total', { loop: 'nodeconfig-status', result: 'ok' })) ??
        0) > 0
        ? true
        : undefined,
    );
    for (const loop of [
      'announcements',
      'orphan-sweep',
      'bgp-peers',
      'nodeconfig-status',
      'blackholes',
    ])
      expect(
        await value('flock_agent_loop_runs_total', { loop, result: 'ok' }),
        loop,
      ).toBeGreaterThan(0);
    expect(
      await value('flock_agent_loop_duration_seconds_count', { loop: 'announcements' }),
    ).toBeGreaterThan(0);
  });
});

describe('secondsSince', () => {
  it("reads BIRD's iso long time as local time; anything else is unknown", () => {
    const at = new Date('2026-11-29T10:00:00').getTime();
    expect(secondsSince('2026-11-29 10:00:00', at + 90_500)).toBe(90.5);
    expect(secondsSince('10:00:00.123', at)).toBeUndefined();
    expect(secondsSince(undefined, at)).toBeUndefined();
  });
});
