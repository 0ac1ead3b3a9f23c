// The lock on a real API server: agents (their claim code, each with its own connection) racing
// for one address, round after round: exactly one owner every round, and the owner is the one
// the object names. Then the claim is released and the next round takes a new address.
import { silentLogger, claimName, AddressClaim } from '@flock/api';
import { ADDRESSCLAIMS, HttpTransport, objectPath, isNotFound } from '@flock/kube';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestCluster, type TestCluster } from '../../testing/test-cluster.js';
import { ClaimBook } from './book.js';

const AGENTS = 5;
const ROUNDS = Number(process.env['FLOCK_CLAIM_ROUNDS'] ?? 1000);

let cluster: TestCluster;

beforeAll(async () => {
  cluster = await startTestCluster('node-0');
});
afterAll(async () => {
  await cluster?.cp.stop();
});

const address = (round: number) =>
  `2001:db8:${(0x200 + Math.floor(round / 0x10000)).toString(16)}::${(round % 0x10000).toString(16)}`;

describe('claims on a real API server', () => {
  it(`${AGENTS} agents racing for one address: exactly one owner in each of ${ROUNDS} rounds`, async () => {
    const books = Array.from(
      { length: AGENTS },
      (_, i) =>
        new ClaimBook({
          transport: new HttpTransport(cluster.cp.kubeConfig),
          nodeName: `node-${i}`,
          logger: silentLogger,
          fetchPod: async () => undefined,
          nodeReady: async () => true,
        }),
    );
    const owners = new Map<number, number>();
    const started = performance.now();
    for (let round = 0; round < ROUNDS; round++) {
      const ip = address(round);
      const results = await Promise.allSettled(
        books.map((b, i) =>
          b.claimPinned(ip, {
            namespace: `tenant-${i}`,
            key: 'Deployment/web',
            pod: `web-${i}`,
            uid: `uid-${i}`,
          }),
        ),
      );
      const won = results.flatMap((r, i) => (r.status === 'fulfilled' ? [i] : []));
      expect(won, `round ${round}`).toHaveLength(1);
      const winner = won[0]!;
      owners.set(winner, (owners.get(winner) ?? 0) + 1);
      for (const r of results)
        if (r.status === 'rejected')
          expect(String(r.reason)).toContain('it is claimed by another namespace');
      const claim = AddressClaim.parse(
        await cluster.api.request({
          method: 'GET',
          path: objectPath(ADDRESSCLAIMS, claimName(ip)),
        }),
      );
      expect(claim.spec).toMatchObject({
        namespace: `tenant-${winner}`,
        holders: [{ uid: `uid-${winner}` }],
      });
      await books[winner]!.releasePinned(ip, `uid-${winner}`);
      await expect(
        cluster.api.request({ method: 'GET', path: objectPath(ADDRESSCLAIMS, claimName(ip)) }),
      ).rejects.toSatisfy(isNotFound);
    }
    const seconds = (performance.now() - started) / 1000;
    console.log(
      `claims race: ${ROUNDS} rounds of ${AGENTS} agents in ${seconds.toFixed(1)} s (${((seconds * 1000) / ROUNDS).toFixed(1)} ms a round); wins by agent ${JSON.stringify(Object.fromEntries(owners))}`,
    );
  });

  it('the API server refuses a claim whose name is not its address, and a change of its owner', async () => {
    const body = (name: string, address: string) => ({
      apiVersion: 'flock.fritzlab.net/v1alpha1',
      kind: 'AddressClaim',
      metadata: { name },
      spec: { address, kind: 'Pinned', namespace: 'a', key: 'k', holders: [] },
    });
    await expect(
      cluster.api.request({
        method: 'POST',
        path: '/apis/flock.fritzlab.net/v1alpha1/addressclaims',
        body: body(claimName('2001:db8:200::1'), '2001:db8:200::2'),
      }),
    ).rejects.toThrow(/metadata.name must be the claimed address/);
  });
});
