import { describe, expect, it } from 'vitest';
import type { NetpolIR } from './ir.js';
import { pod, policy } from '../testing/builders.js';
import { allow, peers, podOf, ports, tr } from '../testing/translate-fixture.js';

describe('translate: peers', () => {
  const ingressFrom = (from: unknown[] | undefined, extra: Record<string, unknown> = {}) =>
    tr([
      policy('x/p', {
        podSelector: { matchLabels: { app: 'a' } },
        ingress: [{ ...(from ? { from } : {}), ...extra }],
      }),
    ]);

  it('an ingress rule without from allows every source', () => {
    const ir = ingressFrom(undefined);
    expect(podOf(ir, 'x/a').ingress?.rules).toEqual([{ kind: 'allow', comment: 'x/p ingress[0]' }]);
  });

  it('an empty from list also allows every source', () => {
    expect(podOf(ingressFrom([]), 'x/a').ingress?.rules).toEqual([
      { kind: 'allow', comment: 'x/p ingress[0]' },
    ]);
  });

  it('a podSelector peer selects pods of the policy namespace only', () => {
    const ir = ingressFrom([{ podSelector: { matchLabels: { app: 'a' } } }]);
    const rule = allow(podOf(ir, 'x/a').ingress?.rules[0]);
    expect(peers(ir, rule?.peers)).toEqual({ v4: ['10.0.1.1'], v6: ['fd00::1:1'] });
  });

  it('a namespaceSelector peer selects every pod of the matching namespaces', () => {
    const ir = ingressFrom([{ namespaceSelector: { matchLabels: { team: 'red' } } }]);
    expect(peers(ir, allow(podOf(ir, 'x/a').ingress?.rules[0])?.peers)).toEqual({
      v4: ['10.0.2.1'],
      v6: ['fd00::2:1'],
    });
  });

  it('podSelector and namespaceSelector in one peer must both match (AND)', () => {
    const ir = ingressFrom([{ namespaceSelector: {}, podSelector: { matchLabels: { app: 'a' } } }]);
    expect(peers(ir, allow(podOf(ir, 'x/a').ingress?.rules[0])?.peers)).toEqual({
      v4: ['10.0.1.1', '10.0.2.1'],
      v6: ['fd00::1:1', 'fd00::2:1'],
    });
  });

  it('several peers add up (OR)', () => {
    const ir = ingressFrom([
      { podSelector: { matchLabels: { app: 'b' } } },
      { namespaceSelector: { matchLabels: { team: 'red' } } },
    ]);
    expect(peers(ir, allow(podOf(ir, 'x/a').ingress?.rules[0])?.peers)).toEqual({
      v4: ['10.0.1.2', '10.0.2.1'],
      v6: ['fd00::1:2', 'fd00::2:1'],
    });
  });

  it('an empty namespaceSelector means every pod of the cluster (not every address)', () => {
    const ir = ingressFrom([{ namespaceSelector: {} }]);
    expect(peers(ir, allow(podOf(ir, 'x/a').ingress?.rules[0])?.peers)).toEqual({
      v4: ['10.0.1.1-10.0.1.2', '10.0.2.1', '10.0.3.1'],
      v6: ['fd00::1:1-fd00::1:2', 'fd00::2:1'],
    });
  });

  it('namespaces carry the kubernetes.io/metadata.name label implicitly', () => {
    const ir = ingressFrom([
      { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'z' } } },
    ]);
    expect(peers(ir, allow(podOf(ir, 'x/a').ingress?.rules[0])?.peers)).toEqual({
      v4: ['10.0.3.1'],
      v6: [],
    });
  });

  it('an ipBlock becomes an interval element', () => {
    const ir = ingressFrom([{ ipBlock: { cidr: '192.0.2.0/24' } }]);
    expect(peers(ir, allow(podOf(ir, 'x/a').ingress?.rules[0])?.peers)).toEqual({
      v4: ['192.0.2.0/24'],
      v6: [],
    });
  });

  it('ipBlock except is cut out of the block', () => {
    const ir = ingressFrom([
      { ipBlock: { cidr: '10.0.0.0/16', except: ['10.0.1.0/24', '10.0.128.0/17'] } },
    ]);
    expect(peers(ir, allow(podOf(ir, 'x/a').ingress?.rules[0])?.peers)).toEqual({
      v4: ['10.0.0.0/24', '10.0.2.0-10.0.127.255'],
      v6: [],
    });
  });

  it('IPv6 ipBlocks with except work the same way', () => {
    const ir = ingressFrom([{ ipBlock: { cidr: '2001:db8::/32', except: ['2001:db8::/33'] } }]);
    expect(peers(ir, allow(podOf(ir, 'x/a').ingress?.rules[0])?.peers)).toEqual({
      v4: [],
      v6: ['2001:db8:8000::/33'],
    });
  });

  it('an ipBlock with host bits set is read as its network (as Kubernetes does)', () => {
    const ir = ingressFrom([{ ipBlock: { cidr: '192.0.2.77/24' } }]);
    expect(peers(ir, allow(podOf(ir, 'x/a').ingress?.rules[0])?.peers)?.v4).toEqual([
      '192.0.2.0/24',
    ]);
  });

  it('a peer that selects no pod makes the rule match nothing: no rule', () => {
    const ir = ingressFrom([{ podSelector: { matchLabels: { app: 'nobody' } } }]);
    expect(podOf(ir, 'x/a').ingress).toEqual({ policies: ['x/p'], rules: [] });
    expect(ir.addressSets).toEqual([]);
  });

  it('pods that finished (Succeeded or Failed) are not peers: their addresses may be reused', () => {
    const done = pod('x/done', { app: 'a' }, ['10.0.1.9'], [], {});
    (done.status as { phase: string }).phase = 'Succeeded';
    const ir = tr(
      [
        policy('x/p', {
          podSelector: { matchLabels: { app: 'b' } },
          ingress: [{ from: [{ podSelector: { matchLabels: { app: 'a' } } }] }],
        }),
      ],
      { pods: [done] },
    );
    expect(peers(ir, allow(podOf(ir, 'x/b').ingress?.rules[0])?.peers)?.v4).toEqual(['10.0.1.1']);
  });

  it('status.podIP is used when podIPs is absent', () => {
    const old = {
      metadata: { name: 'old', namespace: 'y', labels: { app: 'old' } },
      status: { podIP: '10.0.2.9' },
    };
    const ir = tr(
      [
        policy('x/p', {
          podSelector: { matchLabels: { app: 'a' } },
          ingress: [
            { from: [{ namespaceSelector: {}, podSelector: { matchLabels: { app: 'old' } } }] },
          ],
        }),
      ],
      { pods: [old] },
    );
    expect(peers(ir, allow(podOf(ir, 'x/a').ingress?.rules[0])?.peers)).toEqual({
      v4: ['10.0.2.9'],
      v6: [],
    });
  });

  it('a peer set is computed once and shared by every pod the policy selects', () => {
    const ir = tr([
      policy('x/p', { podSelector: {}, ingress: [{ from: [{ namespaceSelector: {} }] }] }),
    ]);
    expect(allow(podOf(ir, 'x/a').ingress?.rules[0])?.peers).toBe('peers_0');
    expect(allow(podOf(ir, 'x/b').ingress?.rules[0])?.peers).toBe('peers_0');
    expect(ir.addressSets).toHaveLength(1);
  });

  it('identical peers share a set across policies, unless a podSelector refers to another namespace', () => {
    const from = [{ podSelector: { matchLabels: { app: 'a' } } }];
    const fromAll = [{ namespaceSelector: {}, podSelector: { matchLabels: { app: 'a' } } }];
    const ir = tr([
      policy('x/p1', { podSelector: {}, ingress: [{ from }, { from: fromAll }] }),
      policy('x/p2', { podSelector: {}, ingress: [{ from }] }),
      policy('y/p3', { podSelector: {}, ingress: [{ from }, { from: fromAll }] }),
    ]);
    const x = podOf(ir, 'x/a').ingress?.rules.map((r) => allow(r)?.peers);
    const y = podOf(ir, 'y/a').ingress?.rules.map((r) => allow(r)?.peers);
    expect(x).toEqual(['peers_0', 'peers_1', 'peers_0']);
    expect(y).toEqual(['peers_2', 'peers_1']);
    expect(peers(ir, 'peers_2')?.v4).toEqual(['10.0.2.1']);
  });

  it('egress peers are destinations', () => {
    const ir = tr([
      policy('x/p', {
        podSelector: { matchLabels: { app: 'a' } },
        egress: [{ to: [{ ipBlock: { cidr: '198.51.100.0/24' } }] }],
      }),
    ]);
    const rule = allow(podOf(ir, 'x/a').egress?.rules[0]);
    expect(peers(ir, rule?.peers)).toEqual({ v4: ['198.51.100.0/24'], v6: [] });
  });
});

describe('translate: ports', () => {
  const ingressPorts = (p: unknown[], selector: Record<string, unknown> = {}) =>
    tr([policy('x/p', { podSelector: selector, ingress: [{ ports: p }] })]);
  const firstPorts = (ir: NetpolIR, ref = 'x/a') =>
    ports(ir, allow(podOf(ir, ref).ingress?.rules[0])?.ports);

  it('a numeric port defaults to TCP', () => {
    expect(firstPorts(ingressPorts([{ port: 80 }]))).toMatchObject({
      elements: ['tcp . 80'],
      interval: false,
    });
  });

  it('UDP and SCTP ports keep their protocol', () => {
    const ir = ingressPorts([
      { port: 53, protocol: 'UDP' },
      { port: 9000, protocol: 'SCTP' },
    ]);
    expect(firstPorts(ir)?.elements).toEqual(['udp . 53', 'sctp . 9000']);
  });

  it('endPort makes a range in an interval set', () => {
    expect(firstPorts(ingressPorts([{ port: 8000, endPort: 8100 }]))).toMatchObject({
      elements: ['tcp . 8000-8100'],
      interval: true,
    });
  });

  it('a protocol without a port means every port of that protocol', () => {
    expect(firstPorts(ingressPorts([{ protocol: 'UDP' }]))?.elements).toEqual(['udp . 0-65535']);
  });

  it('an empty ports list allows every port', () => {
    expect(podOf(ingressPorts([]), 'x/a').ingress?.rules).toEqual([
      { kind: 'allow', comment: 'x/p ingress[0]' },
    ]);
  });

  it('overlapping and adjacent ranges are merged', () => {
    const ir = ingressPorts([
      { port: 80, endPort: 90 },
      { port: 85, endPort: 100 },
      { port: 101 },
      { port: 80, protocol: 'UDP' },
    ]);
    expect(firstPorts(ir)?.elements).toEqual(['tcp . 80-101', 'udp . 80']);
  });

  it('an ingress named port is resolved from each destination pod’s own containers', () => {
    const ir = ingressPorts([{ port: 'http' }]);
    expect(firstPorts(ir, 'x/a')?.elements).toEqual(['tcp . 8080']);
    expect(firstPorts(ir, 'x/b')?.elements).toEqual(['tcp . 9090']);
  });

  it('named ports are protocol-aware', () => {
    const ir = ingressPorts([
      { port: 'dns', protocol: 'UDP' },
      { port: 'http', protocol: 'UDP' },
    ]);
    expect(firstPorts(ir, 'x/a')?.elements).toEqual(['udp . 53']);
  });

  it('a named port the pod does not declare allows nothing on that pod', () => {
    const ir = ingressPorts([{ port: 'dns', protocol: 'UDP' }]);
    expect(podOf(ir, 'x/b').ingress).toEqual({ policies: ['x/p'], rules: [] });
  });

  it('numeric and named ports combine in one port set', () => {
    expect(firstPorts(ingressPorts([{ port: 'http' }, { port: 443 }]))?.elements).toEqual([
      'tcp . 443',
      'tcp . 8080',
    ]);
  });

  it('port sets are shared by content', () => {
    const ir = tr([
      policy('x/p', { podSelector: {}, ingress: [{ ports: [{ port: 80 }] }] }),
      policy('x/q', {
        podSelector: {},
        ingress: [{ ports: [{ port: 80 }] }],
        egress: [{ ports: [{ port: 80 }] }],
      }),
    ]);
    expect(ir.portSets).toEqual([{ name: 'ports_0', elements: ['tcp . 80'], interval: false }]);
  });

  it('an egress named port is resolved per destination pod into address . protocol . port tuples', () => {
    const ir = tr([
      policy('x/p', {
        podSelector: { matchLabels: { app: 'a' } },
        egress: [{ to: [{ namespaceSelector: {} }], ports: [{ port: 'http' }] }],
      }),
    ]);
    const rules = podOf(ir, 'x/a').egress?.rules;
    expect(rules).toEqual([{ kind: 'tuples', comment: 'x/p egress[0]', tuples: 'tuples_0' }]);
    expect(ir.tupleSets[0]).toMatchObject({
      v4: ['10.0.1.1 . tcp . 8080', '10.0.1.2 . tcp . 9090', '10.0.3.1 . tcp . 80'],
      v6: ['fd00::1:1 . tcp . 8080', 'fd00::1:2 . tcp . 9090'],
    });
  });

  it('egress named ports to an ipBlock cover only the pods inside the block', () => {
    const ir = tr([
      policy('x/p', {
        podSelector: { matchLabels: { app: 'a' } },
        egress: [
          {
            to: [{ ipBlock: { cidr: '10.0.1.0/24', except: ['10.0.1.1/32'] } }],
            ports: [{ port: 'http' }],
          },
        ],
      }),
    ]);
    expect(ir.tupleSets[0]).toMatchObject({ v4: ['10.0.1.2 . tcp . 9090'], v6: [] });
  });

  it('egress with numeric and named ports gives a port rule and a tuple rule', () => {
    const ir = tr([
      policy('x/p', {
        podSelector: { matchLabels: { app: 'a' } },
        egress: [{ ports: [{ port: 53, protocol: 'UDP' }, { port: 'http' }] }],
      }),
    ]);
    expect(podOf(ir, 'x/a').egress?.rules.map((r) => r.kind)).toEqual(['allow', 'tuples']);
  });
});
