import { get, type IncomingMessage } from 'node:http';
import { createInflate } from 'node:zlib';
import { API_VERSION, PEERSLICE_KIND, RELAY_PATH, RelayEvent } from '@flock/api';
import { PEERSLICES } from '@flock/kube';
import { createMemoryLogger, FakeApiServer } from '@flock/kube/testing';
import { eventually } from '@flock/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { PeerRelay, type PeerRelayOptions } from './relay.js';
import { tokenAuthenticator } from './token-review.js';

const sliceObject = (name: string, ns: string, pods: { name: string; ip: string }[]) => ({
  apiVersion: API_VERSION,
  kind: PEERSLICE_KIND,
  metadata: { name },
  spec: {
    namespace: ns,
    pods: pods.map((p) => ({ name: p.name, uid: `u-${p.name}`, node: 'n2', ips: [p.ip] })),
  },
});

let relay: PeerRelay | undefined;
afterEach(async () => {
  await relay?.stop();
  relay = undefined;
});

async function start(
  server: FakeApiServer,
  verdict = async (t: string) => t === 'good',
  more: Partial<PeerRelayOptions> = {},
) {
  relay = new PeerRelay({
    transport: server,
    logger: createMemoryLogger(),
    allowedUsers: [],
    authenticate: async (t) => ((await verdict(t)) ? 'allowed' : t === 'slow' ? 'busy' : 'denied'),
    tickMs: 50,
    processMetrics: false,
    ...more,
  });
  const port = await relay.start(0, '127.0.0.1');
  return `http://127.0.0.1:${port}`;
}

/** A metric's values by their labels ("k=v,..."). */
async function metric(name: string): Promise<Record<string, number>> {
  const m = (await relay!.registry.getMetricsAsJSON()).find((x) => x.name === name);
  return Object.fromEntries(
    (m?.values ?? []).map((v) => [
      Object.entries(v.labels)
        .map(([k, x]) => `${k}=${x}`)
        .join(','),
      v.value,
    ]),
  );
}

/** A stream's events as they arrive. */
async function open(url: string, token = 'good') {
  const controller = new AbortController();
  const res = await fetch(url, {
    headers: { authorization: `Bearer ${token}` },
    signal: controller.signal,
  });
  const events: RelayEvent[] = [];
  const abort = () => controller.abort();
  if (res.status === 200 && res.body)
    void (async () => {
      let rest = '';
      const decoder = new TextDecoder();
      try {
        for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
          rest += decoder.decode(chunk);
          let nl: number;
          while ((nl = rest.indexOf('\n')) >= 0) {
            events.push(RelayEvent.parse(JSON.parse(rest.slice(0, nl))));
            rest = rest.slice(nl + 1);
          }
        }
      } catch {
        // cancelled
      }
    })();
  return { status: res.status, events, abort };
}

describe('PeerRelay', () => {
  it('refuses an unknown token and anyone before its slices are synced', async () => {
    const server = new FakeApiServer();
    const url = await start(server);
    // No PeerSlice resource yet: the relay cannot sync.
    expect((await open(`${url}${RELAY_PATH}`)).status).toBe(503);
    expect((await fetch(`${url}/healthz`)).status).toBe(503);
    expect((await open(`${url}${RELAY_PATH}`, 'bad')).status).toBe(401);
    expect((await open(`${url}${RELAY_PATH}`, 'slow')).status).toBe(503);
    expect((await fetch(`${url}${RELAY_PATH}`)).status).toBe(401);
    expect((await fetch(`${url}/other`)).status).toBe(404);
    expect(await metric('flock_peer_relay_requests_total')).toEqual({
      'verdict=allowed': 1,
      'verdict=denied': 2,
      'verdict=busy': 1,
    });
  });

  it('refuses an address that showed too many denied tokens, without asking the API server', async () => {
    const server = new FakeApiServer();
    server.register(PEERSLICES);
    let asked = 0;
    const authenticate = tokenAuthenticator(
      async (t) => {
        asked++;
        return t.startsWith('good') ? 'system:serviceaccount:flock-system:flock-agent' : undefined;
      },
      { allowed: ['system:serviceaccount:flock-system:flock-agent'] },
    );
    const url = await start(server, undefined, { authenticate });
    await eventually('synced', async () => (await fetch(`${url}/healthz`)).status === 200);
    const agent = await open(`${url}${RELAY_PATH}`, 'good');
    expect(agent.status).toBe(200);
    agent.abort();
    for (let i = 0; i < 10; i++)
      expect((await open(`${url}${RELAY_PATH}`, `bad-${i}`)).status).toBe(401);
    // No token at all costs no review and is not counted.
    expect((await fetch(`${url}${RELAY_PATH}`)).status).toBe(401);
    expect((await open(`${url}${RELAY_PATH}`, 'bad-x')).status).toBe(429);
    // From that address a token not reviewed yet waits out the window, even a good one...
    expect((await open(`${url}${RELAY_PATH}`, 'good-too')).status).toBe(429);
    expect(asked).toBe(11);
    // ...but an agent whose token was reviewed before still reconnects.
    const back = await open(`${url}${RELAY_PATH}`, 'good');
    expect(back.status).toBe(200);
    back.abort();
    expect(await metric('flock_peer_relay_requests_total')).toEqual({
      'verdict=allowed': 2,
      'verdict=denied': 11,
      'verdict=limited': 2,
    });
  });

  it('sends a snapshot, then each record change, then resumes a reconnecting agent', async () => {
    const server = new FakeApiServer();
    server.register(PEERSLICES);
    server.putObject(PEERSLICES, sliceObject('s1', 'a', [{ name: 'web', ip: '2001:db8::1' }]));
    const url = await start(server);
    await eventually('synced', async () => (await fetch(`${url}/healthz`)).status === 200);
    const first = await open(`${url}${RELAY_PATH}`);
    expect(first.status).toBe(200);
    await eventually('snapshot', () => first.events.some((e) => e.t === 'synced'));
    expect(first.events.slice(0, 3)).toMatchObject([
      { t: 'begin', full: true, seq: 1 },
      { t: 'put', ns: 'a', pod: { name: 'web' } },
      { t: 'synced', seq: 1 },
    ]);
    const epoch = (first.events[0] as { epoch: string }).epoch;
    server.putObject(
      PEERSLICES,
      sliceObject('s1', 'a', [
        { name: 'web', ip: '2001:db8::1' },
        { name: 'db', ip: '2001:db8::2' },
      ]),
    );
    await eventually('the new record', () =>
      first.events.some((e) => e.t === 'put' && e.seq === 2 && e.pod.name === 'db'),
    );
    await eventually('a tick', () => first.events.some((e) => e.t === 'tick' && e.seq === 2));
    first.abort();
    server.putObject(PEERSLICES, sliceObject('s1', 'a', [{ name: 'db', ip: '2001:db8::2' }]));
    await eventually('logged', () => relay?.log.seq === 3);
    const again = await open(`${url}${RELAY_PATH}?epoch=${epoch}&since=2`);
    await eventually('resumed', () => again.events.length >= 2);
    expect(again.events.slice(0, 2)).toEqual([
      { t: 'begin', epoch, full: false, seq: 2 },
      { t: 'del', seq: 3, ns: 'a', name: 'web' },
    ]);
    // A position of another relay: a snapshot.
    const other = await open(`${url}${RELAY_PATH}?epoch=00000000-0000&since=2`);
    await eventually('snapshot', () => other.events.some((e) => e.t === 'synced'));
    expect(other.events[0]).toMatchObject({ t: 'begin', full: true, seq: 3 });
    expect((await open(`${url}${RELAY_PATH}?since=x`)).status).toBe(400);
    expect(await metric('flock_peer_relay_streams_total')).toEqual({
      'start=snapshot': 2,
      'start=resume': 1,
    });
    // The first stream's agent went away: two left.
    await eventually('two agents', async () => (await metric('flock_peer_relay_agents'))[''] === 2);
    expect(await metric('flock_peer_relay_records')).toEqual({ '': 1 });
    again.abort();
    other.abort();
  });

  it('deflates a stream the agent asks to have deflated, a change flushed at once', async () => {
    const server = new FakeApiServer();
    server.register(PEERSLICES);
    const many = Array.from({ length: 20 }, (_, i) => ({
      name: `web-${i}`,
      ip: `2001:db8::${i + 1}`,
    }));
    for (let s = 0; s < 50; s++) server.putObject(PEERSLICES, sliceObject(`s${s}`, `ns${s}`, many));
    const url = await start(server);
    await eventually('synced', async () => (await fetch(`${url}/healthz`)).status === 200);
    let wire = 0;
    let text = '';
    const res = await new Promise<IncomingMessage>((resolve, reject) =>
      get(
        `${url}${RELAY_PATH}`,
        { headers: { authorization: 'Bearer good', 'accept-encoding': 'deflate' } },
        resolve,
      ).on('error', reject),
    );
    expect(res.headers['content-encoding']).toBe('deflate');
    res.on('data', (b: Buffer) => (wire += b.length));
    const inflate = res.pipe(createInflate());
    inflate.on('data', (b: Buffer) => (text += String(b)));
    await eventually('the snapshot, inflated', () => text.includes('"t":"synced"'));
    const lines = text
      .trim()
      .split('\n')
      .map((l) => RelayEvent.parse(JSON.parse(l)));
    expect(lines.filter((e) => e.t === 'put')).toHaveLength(1_000);
    expect(wire * 5).toBeLessThan(text.length);
    // A change arrives whole, without waiting for more to fill the compressor.
    server.putObject(PEERSLICES, sliceObject('s0', 'ns0', many.slice(1)));
    await eventually('the change, inflated', () => text.includes('"t":"del"'));
    res.destroy();
  });

  it.each([
    { coalesceMs: 300, writes: 1 },
    { coalesceMs: 0, writes: 3 },
  ])(
    "gathers an agent's live changes for $coalesceMs ms into $writes write(s), in order",
    async ({ coalesceMs, writes }) => {
      const server = new FakeApiServer();
      server.register(PEERSLICES);
      server.putObject(PEERSLICES, sliceObject('s1', 'a', []));
      const url = await start(server, undefined, { coalesceMs, tickMs: 60_000 });
      await eventually('synced', async () => (await fetch(`${url}/healthz`)).status === 200);
      const stream = await open(`${url}${RELAY_PATH}`);
      await eventually('snapshot', () => stream.events.some((e) => e.t === 'synced'));
      const pods: { name: string; ip: string }[] = [];
      for (const name of ['a1', 'a2', 'a3']) {
        pods.push({ name, ip: `2001:db8::${pods.length + 1}` });
        server.putObject(PEERSLICES, sliceObject('s1', 'a', [...pods]));
      }
      await eventually('logged', () => relay?.log.seq === 3);
      await eventually(
        'three changes',
        () => stream.events.filter((e) => e.t === 'put').length === 3,
      );
      expect(stream.events.filter((e) => e.t === 'put').map((e) => e.seq)).toEqual([1, 2, 3]);
      expect(await metric('flock_peer_relay_writes_total')).toEqual({ '': writes });
      stream.abort();
    },
  );
});
