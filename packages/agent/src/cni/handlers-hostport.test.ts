// CNI ADD with hostPorts (runtimeConfig.portMappings): kept with the entry, refused when bad or
// when another pod of the node holds the same address, port and protocol.
import { CniErrorCode } from '@flock/api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  datapath,
  handlers,
  pod,
  pods,
  request,
  setUp,
  store,
  tearDown,
  warnings,
} from '../../testing/cni-handlers.js';

beforeEach(setUp);
afterEach(tearDown);

const withPorts = (portMappings: unknown, over: Record<string, unknown> = {}) =>
  request('ADD', {
    config: { cniVersion: '1.1.0', name: 'flock', type: 'flock', runtimeConfig: { portMappings } },
    ...over,
  });

describe('CNI ADD with hostPorts', () => {
  it('keeps the mappings with the entry, canonical (protocol in lower case, address compressed)', async () => {
    const r = await handlers.handle(
      withPorts([
        { hostPort: 8080, containerPort: 80, protocol: 'TCP', hostIP: '' },
        { hostPort: 5353, containerPort: 53, protocol: 'UDP', hostIP: '2001:DB8:0::1' },
      ]),
    );
    expect(r.ok).toBe(true);
    expect(store.get('c1', 'eth0')?.hostPorts).toEqual([
      { protocol: 'tcp', hostPort: 8080, containerPort: 80 },
      { protocol: 'udp', hostPort: 5353, containerPort: 53, hostIP: '2001:db8::1' },
    ]);
  });

  it('no mappings: nothing kept', async () => {
    expect((await handlers.handle(withPorts([]))).ok).toBe(true);
    expect(store.get('c1', 'eth0')?.hostPorts).toBeUndefined();
  });

  it('refuses a bad mapping with the field it is about, and keeps nothing', async () => {
    const r = await handlers.handle(
      withPorts([{ hostPort: 8080, containerPort: 80, protocol: 'icmp' }]),
    );
    expect(r).toMatchObject({
      ok: false,
      error: {
        code: CniErrorCode.InvalidNetworkConfig,
        msg: expect.stringContaining('protocol "icmp"'),
      },
    });
    expect(store.entries()).toEqual([]);
    expect(warnings).toEqual([expect.stringMatching(/^FlockHostPortRefused: /)]);
  });

  it('refuses a hostPort another pod of the node holds, naming it, with an Event; another protocol or address is no conflict', async () => {
    pods.set('default/web2', pod('web2'));
    const second = (portMappings: unknown, containerID: string) =>
      handlers.handle(
        withPorts(portMappings, {
          containerID,
          netns: datapath.createNetns(`/var/run/netns/${containerID}`),
          args: { K8S_POD_NAMESPACE: 'default', K8S_POD_NAME: 'web2' },
        }),
      );
    expect(
      (
        await handlers.handle(
          withPorts([{ hostPort: 8080, containerPort: 80, hostIP: '192.0.2.1' }]),
        )
      ).ok,
    ).toBe(true);
    const r = await second([{ hostPort: 8080, containerPort: 80 }], 'c2');
    expect(r).toMatchObject({
      ok: false,
      error: {
        code: CniErrorCode.NotAllowed,
        msg: 'hostPort tcp *:8080 is taken on this node by pod default/web (tcp 192.0.2.1:8080)',
      },
    });
    expect(warnings).toEqual([
      expect.stringMatching(/^FlockHostPortRefused: hostPort tcp \*:8080/),
    ]);
    expect(store.get('c2', 'eth0')).toBeUndefined();
    // The HostPort conformance spec's three pods: same port, other address or protocol.
    expect(
      await second([{ hostPort: 8080, containerPort: 80, hostIP: '192.0.2.2' }], 'c3'),
    ).toMatchObject({ ok: true });
    pods.set('default/web3', pod('web3'));
    const third = await handlers.handle(
      withPorts([{ hostPort: 8080, containerPort: 80, protocol: 'UDP', hostIP: '192.0.2.2' }], {
        containerID: 'c4',
        netns: datapath.createNetns('/var/run/netns/c4'),
        args: { K8S_POD_NAMESPACE: 'default', K8S_POD_NAME: 'web3' },
      }),
    );
    expect(third.ok).toBe(true);
  });
});
