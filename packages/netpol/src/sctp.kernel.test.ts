// SCTP NetworkPolicy with real packets, without an SCTP stack: this test kernel has none
// (`modprobe sctp`: "Module sctp not found", no /proc/net/sctp, CONFIG_IP_SCTP is not set), so
// the upstream SCTP specs cannot run (docs/conformance.md). Packets are crafted on raw sockets
// (testing/sctp-probe.py) and received by a raw-socket listener in each namespace; nftables
// matches protocol 132 and its ports without the module. Most cases send one INIT one way and
// never need an answer; the reply case relies on the kernel's SCTP conntrack, which is built in
// (CONFIG_NF_CT_PROTO_SCTP=y, not a module on any kernel since 5.x) whatever the SCTP stack.
import { randomBytes, randomInt } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requireKernelTier, type Netns } from '@flock/testkit';
import { clusterPolicy, policy } from '../testing/builders.js';
import { PolicyLab, type Endpoint } from '../testing/lab.js';
import { SctpListener, sendSctp } from '../testing/sctp-probe.js';
import { NAMESPACE_LABELS, topology } from '../testing/topology.js';

/** How long a dropped packet is waited for (an arriving one ends the wait at once). */
const WAIT_MS = 750;
const token = () => randomBytes(8).toString('hex');
let sourcePort = randomInt(20_000, 40_000);
/** A fresh source port per packet, so no packet meets an earlier one's conntrack entry. */
const nextPort = () => ++sourcePort;

interface Case {
  from: string;
  to: string;
  proto: 'sctp' | 'tcp' | 'udp';
  port: number;
}
const sctp = (from: string, to: string, port: number): Case => ({ from, to, proto: 'sctp', port });
const tcp = (from: string, to: string, port: number): Case => ({ from, to, proto: 'tcp', port });
const udp = (from: string, to: string, port: number): Case => ({ from, to, proto: 'udp', port });
const label = (c: Case, family: 4 | 6) => `${c.from} → ${c.to} ${c.proto}/${c.port} IPv${family}`;

// Named SCTP ports: "sig" is 7000 on y/a and 7001 on y/b.
const SIG = { a: 7000, b: 7001 };

describe('SCTP NetworkPolicy with crafted packets (kernel)', () => {
  let lab: PolicyLab;
  const listeners = new Map<string, SctpListener>();
  const wired = new Set(['x/a', 'x/b', 'y/a', 'y/b', 'z/a', 'x/r', 'ext']);

  beforeAll(async () => {
    requireKernelTier('nft', 'sysctl', 'python3');
    const endpoints = topology()
      .filter((e) => wired.has(e.ref))
      .map((e): Endpoint => {
        const sig = e.ns === 'y' ? SIG[e.pod as 'a' | 'b'] : undefined;
        return sig
          ? { ...e, ports: [...(e.ports ?? []), { name: 'sig', port: sig, protocol: 'SCTP' }] }
          : e;
      });
    lab = await PolicyLab.create(NAMESPACE_LABELS, endpoints);
    for (const e of endpoints.filter((x) => x.local))
      listeners.set(e.ref, await SctpListener.start(lab.podNamespace(e.ref)));
    listeners.set('remote', await SctpListener.start(lab.remote));
  });
  afterAll(async () => {
    for (const l of listeners.values()) l.close();
    await lab?.destroy();
  });

  const netnsOf = (ref: string): Netns =>
    lab.endpoint(ref).local ? lab.podNamespace(ref) : lab.remote;
  const listenerOf = (ref: string): SctpListener =>
    listeners.get(lab.endpoint(ref).local ? ref : 'remote')!;
  const address = (ref: string, family: 4 | 6): string => {
    const e = lab.endpoint(ref);
    const a = family === 4 ? e.v4 : e.v6;
    if (!a) throw new Error(`${ref} has no IPv${family} address`);
    return a;
  };

  /** Send one INIT; the function it resolves with says whether the destination got it. */
  async function sendInit(c: Case, family: 4 | 6): Promise<() => Promise<boolean>> {
    const t = token();
    await sendSctp(netnsOf(c.from), {
      src: address(c.from, family),
      dst: address(c.to, family),
      sport: nextPort(),
      dport: c.port,
      token: t,
    });
    return async () => {
      const got = await listenerOf(c.to).seen(t, WAIT_MS);
      // What arrives is what was sent: the receiver checks the CRC32c the crafter wrote.
      if (got) expect(got.crc, label(c, family)).toBe('ok');
      return got !== undefined;
    };
  }

  /** Whether each case arrives, both families, with one shared wait for the dropped ones. */
  async function outcomes(cases: Case[]): Promise<Record<string, boolean>> {
    const pending: [string, Promise<boolean> | (() => Promise<boolean>)][] = [];
    for (const family of [4, 6] as const) {
      for (const c of cases) {
        const name = label(c, family);
        if (c.proto === 'sctp') pending.push([name, await sendInit(c, family)]);
        else if (c.proto === 'tcp')
          pending.push([
            name,
            lab
              .probe(c.from, c.to, { proto: 'tcp', port: c.port, family }, WAIT_MS)
              .then((a) => a.ok),
          ]);
        else {
          const t = token();
          await lab.probe(c.from, c.to, { proto: 'udp', port: c.port, family }, 100, undefined, t);
          pending.push([
            name,
            new Promise((r) => setTimeout(r, WAIT_MS)).then(() => lab.seen(c.to, t)),
          ]);
        }
      }
    }
    const results = await Promise.all(
      pending.map(async ([name, p]) => [name, await (typeof p === 'function' ? p() : p)] as const),
    );
    return Object.fromEntries(results);
  }

  /** The expected outcomes as `outcomes` reports them. */
  function expected(cases: [Case, boolean][]): Record<string, boolean> {
    return Object.fromEntries(
      ([4, 6] as const).flatMap((family) =>
        cases.map(([c, arrives]) => [label(c, family), arrives] as const),
      ),
    );
  }

  const check = async (cases: [Case, boolean][]) =>
    expect(await outcomes(cases.map(([c]) => c))).toEqual(expected(cases));

  // Everything the later cases expect to be dropped, shown to arrive under flock's table
  // without policies: the drops below are the policies' doing.
  const EVERY_CASE: Case[] = [
    sctp('x/a', 'y/a', 80),
    sctp('x/a', 'y/a', 81),
    sctp('x/a', 'y/a', 79),
    sctp('x/a', 'y/a', 91),
    sctp('x/a', 'y/a', SIG.a),
    sctp('x/a', 'y/a', SIG.b),
    sctp('x/a', 'y/b', SIG.a),
    sctp('x/a', 'y/b', SIG.b),
    sctp('z/a', 'y/a', 80),
    sctp('z/a', 'y/a', 81),
    sctp('ext', 'y/a', 80),
    sctp('x/r', 'y/a', 80),
    sctp('x/a', 'z/a', 80),
    sctp('x/a', 'ext', 82),
    tcp('x/a', 'y/a', 80),
    udp('x/a', 'y/a', 80),
    udp('x/a', 'y/a', 81),
  ];

  it('without policies every packet arrives: SCTP to any port from any peer, TCP and UDP, both families', async () => {
    await lab.apply([]);
    await check(EVERY_CASE.map((c) => [c, true]));
  });

  it('an ingress policy allowing SCTP 80 from namespace x: only SCTP, only 80, only from x', async () => {
    await lab.apply([
      policy('y/sctp-80', {
        podSelector: { matchLabels: { pod: 'a' } },
        policyTypes: ['Ingress'],
        ingress: [
          {
            from: [{ namespaceSelector: { matchLabels: { ns: 'x' } } }],
            ports: [{ protocol: 'SCTP', port: 80 }],
          },
        ],
      }),
    ]);
    await check([
      [sctp('x/a', 'y/a', 80), true],
      [sctp('x/r', 'y/a', 80), true], // a pod of x on another node
      [sctp('x/a', 'y/a', 81), false],
      [tcp('x/a', 'y/a', 80), false],
      [udp('x/a', 'y/a', 80), false],
      [sctp('z/a', 'y/a', 80), false],
      [sctp('ext', 'y/a', 80), false],
      [sctp('z/a', 'y/b', 81), true], // y/b is not selected
    ]);
  });

  it('a TCP 80 policy does not let SCTP to port 80 in', async () => {
    await lab.apply([
      policy('y/tcp-80', {
        podSelector: { matchLabels: { pod: 'a' } },
        policyTypes: ['Ingress'],
        ingress: [{ ports: [{ port: 80 }] }],
      }),
    ]);
    await check([
      [tcp('x/a', 'y/a', 80), true],
      [sctp('x/a', 'y/a', 80), false],
    ]);
  });

  it('an SCTP port range (endPort) next to a TCP port: the range’s ends in, beyond them out', async () => {
    await lab.apply([
      policy('y/sctp-range', {
        podSelector: { matchLabels: { pod: 'a' } },
        policyTypes: ['Ingress'],
        ingress: [
          {
            ports: [
              { protocol: 'SCTP', port: 80, endPort: 90 },
              { protocol: 'TCP', port: 81 },
            ],
          },
        ],
      }),
    ]);
    await check([
      [sctp('x/a', 'y/a', 80), true],
      [sctp('x/a', 'y/a', 85), true],
      [sctp('x/a', 'y/a', 90), true],
      [sctp('x/a', 'y/a', 79), false],
      [sctp('x/a', 'y/a', 91), false],
      [tcp('x/a', 'y/a', 81), true],
      [tcp('x/a', 'y/a', 80), false],
      [udp('x/a', 'y/a', 81), false],
    ]);
  });

  it('a named SCTP port resolves per pod, and only for protocol SCTP', async () => {
    const named = (protocol?: 'SCTP') =>
      policy('y/sig', {
        podSelector: {},
        policyTypes: ['Ingress'],
        ingress: [{ ports: [{ port: 'sig', ...(protocol ? { protocol } : {}) }] }],
      });
    await lab.apply([named('SCTP')]);
    await check([
      [sctp('x/a', 'y/a', SIG.a), true],
      [sctp('x/a', 'y/b', SIG.b), true],
      [sctp('x/a', 'y/a', SIG.b), false],
      [sctp('x/a', 'y/b', SIG.a), false],
    ]);
    // Without `protocol` the name means a TCP port, and no pod has a TCP port "sig".
    await lab.apply([named()]);
    await check([
      [sctp('x/a', 'y/a', SIG.a), false],
      [sctp('x/a', 'y/b', SIG.b), false],
    ]);
  });

  it('an egress policy allowing SCTP 80 to y/a and SCTP 80–81 to the external host', async () => {
    await lab.apply([
      policy('x/sctp-out', {
        podSelector: { matchLabels: { pod: 'a' } },
        policyTypes: ['Egress'],
        egress: [
          {
            to: [
              {
                namespaceSelector: { matchLabels: { ns: 'y' } },
                podSelector: { matchLabels: { pod: 'a' } },
              },
            ],
            ports: [{ protocol: 'SCTP', port: 80 }],
          },
          {
            to: [
              { ipBlock: { cidr: '203.0.113.10/32' } },
              { ipBlock: { cidr: '2001:db8:e::10/128' } },
            ],
            ports: [{ protocol: 'SCTP', port: 80, endPort: 81 }],
          },
        ],
      }),
    ]);
    await check([
      [sctp('x/a', 'y/a', 80), true],
      [sctp('x/a', 'ext', 81), true],
      [sctp('x/a', 'y/a', 81), false],
      [tcp('x/a', 'y/a', 80), false],
      [sctp('x/a', 'z/a', 80), false],
      [sctp('x/a', 'ext', 82), false],
      [sctp('x/b', 'z/a', 80), true], // x/b is not selected
    ]);
  });

  it('ClusterNetworkPolicy: an Admin Deny of SCTP 80 over an allowing NetworkPolicy, a Baseline Deny of SCTP egress', async () => {
    const inNs = (name: string) => ({
      namespaces: { matchLabels: { 'kubernetes.io/metadata.name': name } },
    });
    const sctpPorts = (start: number, end: number) => [
      { sctp: { destinationPort: start === end ? { number: start } : { range: { start, end } } } },
    ];
    await lab.apply([policy('y/allow-all', { podSelector: {}, ingress: [{}] })], {
      clusterPolicies: [
        clusterPolicy('deny-sctp-from-x', 'Admin', 10, {
          subject: inNs('y'),
          ingress: [{ action: 'Deny', from: [inNs('x')], protocols: sctpPorts(80, 80) }],
        }),
        clusterPolicy('deny-sctp-to-y', 'Baseline', 10, {
          subject: inNs('z'),
          egress: [{ action: 'Deny', to: [inNs('y')], protocols: sctpPorts(80, 81) }],
        }),
      ],
    });
    await check([
      [sctp('x/a', 'y/a', 80), false],
      [sctp('x/a', 'y/a', 81), true],
      [tcp('x/a', 'y/a', 80), true],
      [sctp('z/a', 'y/a', 80), false],
      [sctp('z/a', 'y/a', 81), false],
      [sctp('z/a', 'y/a', 82), true],
      [tcp('z/a', 'y/a', 80), true],
      [sctp('z/a', 'x/a', 80), true],
    ]);
  });

  it('replies of an allowed association come back to an isolated client through conntrack, forged ones do not', async () => {
    const [client, server] = [lab.podNamespace('x/a'), lab.podNamespace('y/a')];
    /** x/a sends INITs to y/a; which of y/a's INIT ACKs (and a new INIT of its own) reach x/a? */
    async function answers(family: 4 | 6) {
      const [xa, ya] = [address('x/a', family), address('y/a', family)];
      const init = async (badChecksum = false) => {
        const sport = nextPort();
        const t = token();
        const sent = await sendSctp(client, {
          src: xa,
          dst: ya,
          sport,
          dport: 80,
          token: t,
          badChecksum,
        });
        return { sport, tag: sent.tag ?? 0, arrived: listeners.get('y/a')!.seen(t, WAIT_MS) };
      };
      /** Send from y/a to x/a; `arrived` says whether x/a got the packet. */
      const fromServer = async (
        sport: number,
        dport: number,
        chunk: 'init' | 'init-ack',
        vtag: number,
      ) => {
        const t = token();
        await sendSctp(server, { src: ya, dst: xa, sport, dport, token: t, chunk, vtag });
        return { arrived: listeners.get('x/a')!.seen(t, WAIT_MS) };
      };
      const good = await init();
      const bad = await init(true);
      // Sent one after the other, waited for together.
      const sent = {
        init: good,
        reply: await fromServer(80, good.sport, 'init-ack', good.tag),
        // The kernel's SCTP conntrack checks the verification tag of a reply (RFC 9260 §8.5) …
        wrongTag: await fromServer(80, good.sport, 'init-ack', (good.tag ^ 1) >>> 0),
        // … and the INIT's CRC32c: a corrupted one opens no association to answer.
        afterBadChecksum: await fromServer(80, bad.sport, 'init-ack', bad.tag),
        newFromServer: await fromServer(nextPort(), 80, 'init', 0),
      };
      const arrived = await Promise.all(
        Object.entries(sent).map(async ([k, p]) => [k, (await p.arrived) !== undefined] as const),
      );
      return Object.fromEntries(arrived);
    }

    // Without policies everything reaches x/a: what is dropped below is dropped by policy.
    await lab.apply([]);
    for (const family of [4, 6] as const)
      expect(await answers(family), `IPv${family}`).toEqual({
        init: true,
        reply: true,
        wrongTag: true,
        afterBadChecksum: true,
        newFromServer: true,
      });
    // x/a takes no ingress at all; y/a takes SCTP 80 from x.
    await lab.apply([
      policy('x/no-ingress', {
        podSelector: { matchLabels: { pod: 'a' } },
        policyTypes: ['Ingress'],
      }),
      policy('y/sctp-80', {
        podSelector: { matchLabels: { pod: 'a' } },
        policyTypes: ['Ingress'],
        ingress: [
          {
            from: [{ namespaceSelector: { matchLabels: { ns: 'x' } } }],
            ports: [{ protocol: 'SCTP', port: 80 }],
          },
        ],
      }),
    ]);
    for (const family of [4, 6] as const)
      expect(await answers(family), `IPv${family}`).toEqual({
        init: true,
        reply: true,
        wrongTag: false,
        afterBadChecksum: false,
        newFromServer: false,
      });
  });
});
