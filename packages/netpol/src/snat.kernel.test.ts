// Private IPv4's SNAT with real packets in the kernel tier's PolicyLab: pods of namespace x stand
// for a Private pool's pods (their slice 10.1.0.0/24 is translated), 10.0.0.0/8 is the cluster's
// range. Leaving the cluster a pod's packets carry the node's uplink address and the answers
// come back through conntrack; inside the cluster, to this node's pods and to pods elsewhere,
// the pod's own address stays, so NetworkPolicy on the other side judges the real pod.
import { run } from '@flock/exec';
import { requireKernelTier } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { policy } from '../testing/builders.js';
import { PolicyLab, UPLINK, type StateOptions } from '../testing/lab.js';
import { NAMESPACE_LABELS, topology } from '../testing/topology.js';

const PRIVATE: StateOptions = {
  render: { snat: { sources: ['10.1.0.0/24'], keep: ['10.0.0.0/8'] } },
};

describe('private IPv4 SNAT (kernel)', () => {
  let lab: PolicyLab;
  let n = 0;
  const some = new Set(['x/a', 'x/b', 'y/a', 'x/r', 'ext']);
  beforeAll(async () => {
    requireKernelTier('nft', 'sysctl', 'conntrack');
    lab = await PolicyLab.create(
      NAMESPACE_LABELS,
      topology().filter((e) => some.has(e.ref)),
    );
  });
  afterAll(async () => {
    await lab?.destroy();
  });

  /** A UDP probe from → to: who answered, and the source `to` saw. */
  async function udp(from: string, to: string) {
    const token = `snat-${process.pid}-${++n}`;
    const answer = await lab.probe(
      from,
      to,
      { proto: 'udp', port: 80, family: 4 },
      1500,
      undefined,
      token,
    );
    return { reply: answer.reply, source: await lab.sourceOf(to, token) };
  }

  it('without the chain a pod leaves with its own address (what the router would drop)', async () => {
    await lab.apply([]);
    expect(await udp('x/a', 'ext')).toEqual({ reply: 'ext', source: lab.endpoint('x/a').v4 });
  });

  it("beyond the cluster a private pod's packets carry the node's address; the answer finds the pod (TCP and UDP)", async () => {
    await lab.apply([], PRIVATE);
    expect(await udp('x/a', 'ext')).toEqual({ reply: 'ext', source: UPLINK.node4 });
    expect(await udp('x/b', 'ext')).toEqual({ reply: 'ext', source: UPLINK.node4 });
    const tcp = await lab.probe('x/a', 'ext', { proto: 'tcp', port: 81, family: 4 }, 1500);
    expect(tcp).toMatchObject({ ok: true, reply: 'ext' });
    // IPv6 is never translated.
    const v6 = await lab.probe('x/a', 'ext', { proto: 'tcp', port: 80, family: 6 }, 1500);
    expect(v6).toMatchObject({ ok: true, reply: 'ext' });
  });

  it('conntrack holds the translation: the original source, the reply to the node address', async () => {
    await lab.apply([], PRIVATE);
    await udp('x/a', 'ext');
    const { stdout } = await run('ip', [
      ...['netns', 'exec', lab.node.name, 'conntrack', '-L', '-p', 'udp'],
      ...['--src', lab.endpoint('x/a').v4!, '--dst', lab.endpoint('ext').v4!],
    ]);
    const line = stdout.split('\n').find((l) => l.includes(`dst=${UPLINK.node4}`));
    expect(line, stdout).toBeDefined();
    expect(line).toMatch(
      new RegExp(
        `src=${lab.endpoint('ext').v4!.replace(/\./g, '\\.')} dst=${UPLINK.node4.replace(/\./g, '\\.')}`,
      ),
    );
  });

  it('inside the cluster the pod keeps its address: to a pod of this node and to one elsewhere', async () => {
    await lab.apply([], PRIVATE);
    const own = lab.endpoint('x/a').v4;
    expect(await udp('x/a', 'y/a')).toEqual({ reply: 'y/a', source: own });
    expect(await udp('x/a', 'x/r')).toEqual({ reply: 'x/r', source: own });
    // y's pods are not in the translated slice: they keep their address beyond the cluster too.
    expect(await udp('y/a', 'ext')).toEqual({ reply: 'ext', source: lab.endpoint('y/a').v4 });
    // With no cluster range kept, a pod of this node still sees the real source; one elsewhere not.
    await lab.apply([], { render: { snat: { sources: ['10.1.0.0/24'], keep: [] } } });
    expect(await udp('x/a', 'y/a')).toEqual({ reply: 'y/a', source: own });
    expect(await udp('x/a', 'x/r')).toEqual({ reply: 'x/r', source: UPLINK.node4 });
  });

  it('NetworkPolicy judges the real pod: ingress by namespace inside, egress before the translation', async () => {
    const onlyX = policy('y/only-x', {
      podSelector: { matchLabels: { pod: 'a' } },
      policyTypes: ['Ingress'],
      ingress: [{ from: [{ namespaceSelector: { matchLabels: { ns: 'x' } } }] }],
    });
    const noExternal = policy('x/cluster-only', {
      podSelector: { matchLabels: { pod: 'b' } },
      policyTypes: ['Egress'],
      egress: [{ to: [{ ipBlock: { cidr: '10.0.0.0/8' } }] }],
    });
    await lab.apply([onlyX, noExternal], PRIVATE);
    expect((await udp('x/a', 'y/a')).reply).toBe('y/a');
    expect((await udp('x/b', 'ext')).reply).toBeUndefined();
    expect((await udp('x/a', 'ext')).source).toBe(UPLINK.node4);
  });
});
