// CNI GC.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hostVethName } from '../datapath/index.js';
import {
  datapath,
  handlers,
  hostLinks,
  pod,
  pods,
  request,
  setUp,
  store,
  tearDown,
} from '../../testing/cni-handlers.js';

beforeEach(setUp);
afterEach(tearDown);

describe('CNI GC', () => {
  it('GC removes attachments the runtime no longer lists', async () => {
    pods.set('default/other', pod('other'));
    await handlers.handle(request('ADD'));
    await handlers.handle(
      request('ADD', {
        containerID: 'c2',
        netns: datapath.createNetns('/var/run/netns/p2'),
        args: { K8S_POD_NAMESPACE: 'default', K8S_POD_NAME: 'other' },
      }),
    );
    const gc = request('GC', { containerID: undefined, ifName: undefined, netns: undefined });
    gc.config['cni.dev/valid-attachments'] = [{ containerID: 'c2', ifname: 'eth0' }];
    expect(await handlers.handle(gc)).toEqual({ ok: true });
    expect(store.entries().map((e) => e.containerID)).toEqual(['c2']);
    expect(hostLinks()).toEqual([hostVethName('c2', 'eth0')]);
  });

  it('GC also removes a flock veth that no allocation accounts for', async () => {
    const netns = datapath.createNetns('/var/run/netns/crashed');
    await datapath.setupPod({
      containerID: 'lost',
      ifName: 'eth0',
      netns,
      hostVeth: hostVethName('lost', 'eth0'),
      ip6: '2001:db8:100::99',
    });
    const gc = request('GC', { containerID: undefined, ifName: undefined, netns: undefined });
    gc.config['cni.dev/valid-attachments'] = [];
    expect(await handlers.handle(gc)).toEqual({ ok: true });
    expect(hostLinks()).toEqual([]);
  });
});
