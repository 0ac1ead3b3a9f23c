// The claim protocol on the in-memory API server (the real one's twin: creates race to 409,
// updates and deletes carry resourceVersion preconditions).
import { CniErrorCode, claimName, type AddressClaim } from '@flock/api';
import { pod } from '@flock/api/testing';
import { ADDRESSCLAIMS, NODES, PODS } from '@flock/kube';
import { FakeApiServer } from '@flock/kube/testing';
import { beforeEach, describe, expect, it } from 'vitest';
import { testClaims } from '../../testing/claims.js';
import { CniCommandError } from '../core/cni-error.js';
import type { ClaimBook } from './book.js';

const PINNED = '2001:db8:200::7';
let api: FakeApiServer;

const claim = (address = PINNED) => api.getObject<AddressClaim>(ADDRESSCLAIMS, claimName(address));
const book = (node: string, handoverWaitMs = 0): ClaimBook =>
  testClaims({ api, nodeName: node, handoverWaitMs }).book;
const want = (
  name: string,
  uid = `uid-${name}`,
  key = 'Deployment/web',
  namespace = 'default',
) => ({
  namespace,
  key,
  pod: name,
  uid,
});
const codeOf = async (p: Promise<unknown>) => {
  try {
    await p;
    return 0;
  } catch (e) {
    return e instanceof CniCommandError ? e.code : -1;
  }
};
const node = (name: string, ready: boolean) =>
  api.putObject(NODES, {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name },
    status: { conditions: [{ type: 'Ready', status: ready ? 'True' : 'Unknown' }] },
  });

beforeEach(() => {
  api = new FakeApiServer();
});

describe('pinned claims', () => {
  it('of many agents racing for one address, exactly one wins each round', async () => {
    for (let round = 0; round < 50; round++) {
      const address = `2001:db8:200::${(round + 1).toString(16)}`;
      const results = await Promise.allSettled(
        ['a', 'b', 'c', 'd', 'e'].map((n) =>
          book(`node-${n}`).claimPinned(address, want(`p-${n}`, `uid-${n}`, 'Pod/x', `ns-${n}`)),
        ),
      );
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const holder = claim(address)?.spec.holders[0];
      const winner = results.findIndex((r) => r.status === 'fulfilled');
      expect(holder?.uid).toBe(`uid-${'abcde'[winner]}`);
    }
  });

  it('is the holder’s again on a repeated ADD; refuses another namespace, another key, a running holder', async () => {
    // The API server gives a pod its UID.
    const uid = api.putObject(PODS, pod({ name: 'web-1', nodeName: 'node-a' })).metadata.uid;
    await book('node-a').claimPinned(PINNED, want('web-1', uid));
    await book('node-a').claimPinned(PINNED, want('web-1', uid));
    await expect(
      book('node-b').claimPinned(PINNED, want('x', 'uid-x', 'Deployment/web', 'evil')),
    ).rejects.toThrow(`pinned address ${PINNED}: it is claimed by another namespace`);
    await expect(
      book('node-b').claimPinned(PINNED, want('db-0', 'uid-db', 'StatefulSet/db')),
    ).rejects.toThrow(/held by pod web-1 \(key Deployment\/web; this pod's key is StatefulSet\/db/);
    await expect(book('node-b').claimPinned(PINNED, want('web-2'))).rejects.toThrow(
      /held by pod web-1, which is not being deleted/,
    );
    expect(claim()?.spec.holders).toEqual([{ node: 'node-a', pod: 'web-1', uid }]);
  });

  it('passes to a replacement of the same key once the holder is gone, terminated or withdrawn', async () => {
    await book('node-a').claimPinned(PINNED, want('web-1'));
    // Gone from the API server: taken.
    await book('node-b').claimPinned(PINNED, want('web-2'));
    expect(claim()?.spec.holders[0]).toMatchObject({ node: 'node-b', pod: 'web-2' });
    // Terminated (phase Failed): taken.
    const uid2 = api.putObject(PODS, pod({ name: 'web-2', phase: 'Failed' })).metadata.uid;
    await book('node-b').claimPinned(PINNED, want('web-2', uid2)); // web-2's own claim again
    await book('node-c').claimPinned(PINNED, want('web-3'));
    expect(claim()?.spec.holders[0]).toMatchObject({ node: 'node-c', pod: 'web-3' });
    // Being deleted on a Ready node: wait (try again later) until its agent marks it withdrawn.
    const uid3 = api.putObject(PODS, pod({ name: 'web-3', terminating: true })).metadata.uid;
    await book('node-c').claimPinned(PINNED, want('web-3', uid3));
    node('node-c', true);
    expect(await codeOf(book('node-a').claimPinned(PINNED, want('web-4')))).toBe(
      CniErrorCode.TryAgainLater,
    );
    await book('node-c').markWithdrawn(PINNED, uid3);
    expect(claim()?.spec.holders[0]?.withdrawn).toBe(true);
    await book('node-a').claimPinned(PINNED, want('web-4'));
    expect(claim()?.spec.holders).toEqual([{ node: 'node-a', pod: 'web-4', uid: 'uid-web-4' }]);
  });

  it('passes at once from a holder being deleted on a node that is not Ready (a dead node)', async () => {
    const uid = api.putObject(PODS, pod({ name: 'web-1', terminating: true })).metadata.uid;
    await book('node-a').claimPinned(PINNED, want('web-1', uid));
    node('node-a', false);
    await book('node-b').claimPinned(PINNED, want('web-2'));
    expect(claim()?.spec.holders[0]).toMatchObject({ node: 'node-b', pod: 'web-2' });
  });

  it('waits for a withdrawal up to its bound, and takes the claim as soon as it comes', async () => {
    const uid = api.putObject(PODS, pod({ name: 'web-1', terminating: true })).metadata.uid;
    await book('node-a').claimPinned(PINNED, want('web-1', uid));
    node('node-a', true);
    const taking = book('node-b', 5_000).claimPinned(PINNED, want('web-2'));
    await new Promise((r) => setTimeout(r, 50));
    await book('node-a').markWithdrawn(PINNED, uid);
    await taking;
    expect(claim()?.spec.holders[0]).toMatchObject({ node: 'node-b', pod: 'web-2' });
  });

  it('releases only what the pod still holds', async () => {
    await book('node-a').claimPinned(PINNED, want('web-1'));
    await book('node-b').claimPinned(PINNED, want('web-2')); // web-1 is gone: taken over
    await book('node-a').releasePinned(PINNED, 'uid-web-1');
    expect(claim()?.spec.holders[0]?.pod).toBe('web-2');
    await book('node-b').releasePinned(PINNED, 'uid-web-2');
    expect(claim()).toBeUndefined();
  });
});

describe('anycast claims', () => {
  const ANYCAST = '2001:db8:300::53';
  const group = { namespace: 'dns', key: 'Deployment/coredns' };

  it('nodes of one group join and leave; the last one out deletes the claim', async () => {
    await book('node-a').joinAnycast(ANYCAST, group);
    await book('node-b').joinAnycast(ANYCAST, group);
    await book('node-b').joinAnycast(ANYCAST, group);
    expect(claim(ANYCAST)?.spec).toMatchObject({
      kind: 'Anycast',
      namespace: 'dns',
      key: 'Deployment/coredns',
      holders: [{ node: 'node-a' }, { node: 'node-b' }],
    });
    await book('node-a').leaveAnycast(ANYCAST);
    expect(claim(ANYCAST)?.spec.holders).toEqual([{ node: 'node-b' }]);
    await book('node-b').leaveAnycast(ANYCAST);
    expect(claim(ANYCAST)).toBeUndefined();
  });

  it('refuses another namespace, another group of the namespace, and a pinned address', async () => {
    await book('node-a').joinAnycast(ANYCAST, group);
    await expect(
      book('node-b').joinAnycast(ANYCAST, { ...group, namespace: 'evil' }),
    ).rejects.toThrow(`anycast address ${ANYCAST}: it belongs to another namespace`);
    await expect(book('node-b').joinAnycast(ANYCAST, { ...group, key: 'Pod/x' })).rejects.toThrow(
      /belongs to group Deployment\/coredns of this namespace, not Pod\/x/,
    );
    await book('node-a').claimPinned(PINNED, want('web-1'));
    await expect(book('node-b').joinAnycast(PINNED, group)).rejects.toThrow(
      /claimed as a pinned address/,
    );
    await expect(
      book('node-b').claimPinned(ANYCAST, want('web-1', 'uid-web-1', 'x', 'dns')),
    ).rejects.toThrow(/claimed as an anycast address/);
    expect(claim(ANYCAST)?.spec.holders).toEqual([{ node: 'node-a' }]);
  });

  it('many nodes joining at once all end up in the group', async () => {
    const nodes = Array.from({ length: 12 }, (_, i) => `node-${i}`);
    await Promise.all(nodes.map((n) => book(n).joinAnycast(ANYCAST, group)));
    expect(
      claim(ANYCAST)
        ?.spec.holders.map((h) => h.node)
        .sort(),
    ).toEqual([...nodes].sort());
  });
});
