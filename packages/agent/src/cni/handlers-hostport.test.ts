// CNI ADD with hostPorts (runtimeConfig.portMappings): kept with the entry, refused when bad,
// when another pod of the node holds the same address, port and protocol, when a daemon of the
// node listens there, or when the pod has no address of the mapping's family.
import { CniErrorCode } from '@flock/api';
import { AddressAllocator } from '@flock/ipam';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  datapath,
  handlers,
  make,
  node,
  nodeConfig,
  pod,
  pods,
  request,
  setNode,
  setUp,
  store,
  tearDown,
  warnings,
} from '../../testing/cni-handlers.js';
import { AgentConfig, reservedHostPorts } from '../core/config.js';

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

describe('CNI ADD refuses the ports of the node itself', () => {
  const refused = async (portMappings: unknown, msg: RegExp) => {
    warnings.length = 0;
    const r = await handlers.handle(withPorts(portMappings));
    expect(r).toMatchObject({ ok: false, error: { code: CniErrorCode.NotAllowed } });
    expect(!r.ok && r.error.msg).toMatch(msg);
    expect(warnings).toEqual([expect.stringMatching(/^FlockHostPortRefused: hostPort /)]);
    expect(store.entries()).toEqual([]);
    expect(node!.allocator.allocations()).toEqual([]);
  };

  it("BGP's TCP 179, BFD's UDP 3784 and 4784 and the kubelet's ports, whatever the hostIP", async () => {
    await refused(
      [{ hostPort: 179, containerPort: 1179 }],
      /^hostPort tcp \*:179 is reserved on this node: BGP \(BIRD\) uses 179\/tcp on every node address/,
    );
    await refused(
      [{ hostPort: 179, containerPort: 179, hostIP: '192.0.2.1' }],
      /^hostPort tcp 192\.0\.2\.1:179 is reserved on this node: BGP/,
    );
    await refused(
      [{ hostPort: 3784, containerPort: 3784, protocol: 'UDP', hostIP: '::' }],
      /^hostPort udp \[::\]:3784 is reserved on this node: BFD single-hop/,
    );
    await refused(
      [{ hostPort: 4784, containerPort: 4784, protocol: 'udp', hostIP: '2001:db8::1' }],
      /BFD multi-hop/,
    );
    for (const port of [10250, 10248, 10255])
      await refused([{ hostPort: port, containerPort: 80, hostIP: '0.0.0.0' }], /the kubelet/);
    // One reserved mapping among others refuses the ADD: nothing of it is kept.
    await refused(
      [
        { hostPort: 8080, containerPort: 80 },
        { hostPort: 179, containerPort: 179 },
      ],
      /:179 is reserved/,
    );
  });

  it('another protocol on those ports is no daemon of the node: allowed', async () => {
    const r = await handlers.handle(
      withPorts([
        { hostPort: 179, containerPort: 179, protocol: 'udp' },
        { hostPort: 3784, containerPort: 3784, protocol: 'tcp' },
      ]),
    );
    expect(r.ok).toBe(true);
    expect(store.get('c1', 'eth0')?.hostPorts).toHaveLength(2);
  });

  it("the agent's --health-port and --reserved-host-ports, from the agent's settings", async () => {
    const config = AgentConfig.parse({
      nodeName: 'n1',
      healthPort: 9911,
      reservedHostPorts: '22/tcp,30000-32767/udp',
    });
    make({ reservedHostPorts: reservedHostPorts(config) });
    await refused(
      [{ hostPort: 9911, containerPort: 80 }],
      /^hostPort tcp \*:9911 is reserved on this node: the flock agent \(--health-port\) uses 9911\/tcp/,
    );
    await refused([{ hostPort: 22, containerPort: 22, hostIP: '::1' }], /--reserved-host-ports/);
    await refused(
      [{ hostPort: 31000, containerPort: 53, protocol: 'UDP' }],
      /uses 30000-32767\/udp on every node address/,
    );
    await refused([{ hostPort: 179, containerPort: 179 }], /BGP/); // the daemons' stay
    expect((await handlers.handle(withPorts([{ hostPort: 31000, containerPort: 53 }]))).ok).toBe(
      true,
    );
  });
});

describe('CNI ADD with a hostPort of a family the pod has no address in', () => {
  /** This node gives pods IPv6 only (no cidr4); a pinned IPv4 address is a pod's only IPv4. */
  const ipv6Only = () => {
    const alloc = AddressAllocator.create({
      cidr6: nodeConfig.spec.cidr6,
      pinnedCIDRs: nodeConfig.spec.pinnedCIDRs!,
    });
    if (!alloc.ok) throw new Error(alloc.error);
    setNode({ nodeConfig, allocator: alloc.value });
  };

  it('refuses a hostIP or 0.0.0.0 of the family, naming the mapping, with an Event; keeps nothing', async () => {
    ipv6Only();
    for (const [hostIP, shown] of [
      ['192.0.2.1', '192.0.2.1'],
      ['0.0.0.0', '0.0.0.0'],
    ]) {
      warnings.length = 0;
      const r = await handlers.handle(withPorts([{ hostPort: 8080, containerPort: 80, hostIP }]));
      expect(r).toMatchObject({
        ok: false,
        error: {
          code: CniErrorCode.NotAllowed,
          msg: `hostPort tcp ${shown}:8080 cannot reach the pod: the pod has no IPv4 address (a hostPort is DNATed within its family)`,
        },
      });
      expect(warnings).toEqual([
        expect.stringMatching(/^FlockHostPortRefused: hostPort tcp .*:8080 cannot reach the pod/),
      ]);
      expect(store.entries()).toEqual([]);
      expect(node!.allocator.allocations()).toEqual([]);
    }
  });

  it('no hostIP: kept for the family the pod has (IPv6), the IPv4 addresses left to others', async () => {
    ipv6Only();
    const r = await handlers.handle(withPorts([{ hostPort: 8080, containerPort: 80 }]));
    expect(r.ok).toBe(true);
    expect(store.get('c1', 'eth0')?.hostPorts).toEqual([
      { protocol: 'tcp', hostPort: 8080, containerPort: 80, family: 6 },
    ]);
    // The IPv4 side of the port stays free: a pod with an IPv4 address (pinned) may have it.
    const other = async (name: string, hostIP: string, annotations: Record<string, string>) => {
      pods.set(`default/${name}`, pod(name, annotations));
      return handlers.handle(
        withPorts([{ hostPort: 8080, containerPort: 80, hostIP }], {
          containerID: name,
          netns: datapath.createNetns(`/var/run/netns/${name}`),
          args: { K8S_POD_NAMESPACE: 'default', K8S_POD_NAME: name },
        }),
      );
    };
    expect(await other('v6', '::', {})).toMatchObject({
      ok: false,
      error: {
        msg: 'hostPort tcp [::]:8080 is taken on this node by pod default/web (tcp [::]:8080)',
      },
    });
    const v4 = await other('v4', '0.0.0.0', { 'flock.fritzlab.net/pinned-ip': '198.51.100.7' });
    expect(v4.ok).toBe(true);
    expect(store.get('v4', 'eth0')?.hostPorts).toEqual([
      { protocol: 'tcp', hostPort: 8080, containerPort: 80, family: 4 },
    ]);
  });

  it('a pod of both families keeps a mapping on every address as it was asked', async () => {
    const r = await handlers.handle(withPorts([{ hostPort: 8080, containerPort: 80 }]));
    expect(r.ok).toBe(true);
    expect(store.get('c1', 'eth0')?.hostPorts).toEqual([
      { protocol: 'tcp', hostPort: 8080, containerPort: 80 },
    ]);
  });
});
