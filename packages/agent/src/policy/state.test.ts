import { render, translate } from '@flock/netpol';
import { describe, expect, it } from 'vitest';
import { hostVethName } from '../datapath/index.js';
import { CachedPod } from '../node/pods.js';
import { PolicyNamespace } from './caches.js';
import { UNKNOWN_POD_POLICY, buildPolicyState, type PolicyInputs } from './state.js';
import { entry, isolatedForIngress, namespace, networkPolicy, pod } from '../../testing/policy.js';
import { checkPolicy } from './validate.js';

const ns = [PolicyNamespace.parse(namespace('shop')), PolicyNamespace.parse(namespace('other'))];
const p = (...args: Parameters<typeof pod>) => CachedPod.parse(pod(...args));
const checked = (raw: unknown) => checkPolicy(raw)!;
const veth = (name: string) => hostVethName(`ctr-${name}`, 'eth0');

function build(over: Partial<PolicyInputs>) {
  return buildPolicyState({ namespaces: ns, pods: [], policies: [], locals: [], ...over });
}
const script = (over: Partial<PolicyInputs>) => render(translate(build(over).state));

describe('buildPolicyState', () => {
  it('local pods come from the store: veth by container ID, addresses and anycast from the entry', () => {
    const web = entry('web', '2001:db8:1::5', {
      ip4: '192.0.2.5',
      anycast: ['2001:db8:aa::1'],
    });
    // The cached Pod has no podIPs yet (kubelet reports them after ADD returns).
    const { state } = build({
      locals: [{ entry: web, pod: p('web', { app: 'web' }, []) }],
    });
    expect(state.local).toEqual([
      { namespace: 'shop', name: 'web', interface: veth('web'), anycast: ['2001:db8:aa::1'] },
    ]);
    expect(state.pods).toEqual([
      expect.objectContaining({
        metadata: { namespace: 'shop', name: 'web', labels: { app: 'web' } },
        status: { phase: 'Running', podIPs: [{ ip: '2001:db8:1::5' }, { ip: '192.0.2.5' }] },
      }),
    ]);
    const text = script({ locals: [{ entry: web, pod: p('web', { app: 'web' }, []) }] });
    expect(text).toContain(`"${veth('web')}" . 2001:db8:1::5`);
    expect(text).toContain(`"${veth('web')}" . 2001:db8:aa::1`);
    expect(text).toContain(`"${veth('web')}" . 192.0.2.5`);
  });

  it('the source addresses of a local pod are only those its claims allow (anti-spoofing)', () => {
    const web = entry('web', '2001:db8:200::7', { ip4: '192.0.2.5', anycast: ['2001:db8:aa::1'] });
    // Its pinned IPv6 address passed to another pod; its anycast group is not Ready here.
    const locals = [
      {
        entry: web,
        pod: p('web', { app: 'web' }, []),
        sources: { addresses: ['192.0.2.5'], anycast: [] },
      },
    ];
    const text = script({ locals });
    expect(text).toContain(`"${veth('web')}" . 192.0.2.5`);
    expect(text).not.toContain(`"${veth('web')}" . 2001:db8:200::7`);
    expect(text).not.toContain(`"${veth('web')}" . 2001:db8:aa::1`);
    expect(build({ locals }).state.local).toEqual([
      { namespace: 'shop', name: 'web', interface: veth('web'), anycast: [] },
    ]);
  });

  it('every other pod of the cluster is a peer by status.podIPs; the cached copy of a local pod is skipped', () => {
    const web = entry('web', '2001:db8:1::5');
    const { state } = build({
      locals: [{ entry: web, pod: p('web', { app: 'web' }, ['2001:db8:1::5']) }],
      pods: [
        p('web', { app: 'web' }, ['2001:db8:1::5']),
        p('db', { app: 'db' }, ['2001:db8:2::7']),
        p('starting', { app: 'db' }, []),
        CachedPod.parse({
          ...pod('agent', { app: 'db' }, ['198.51.100.1']),
          spec: { hostNetwork: true },
        }),
      ],
    });
    expect(state.pods.map((x) => x.metadata.name)).toEqual(['web', 'db']);
    const text = script({
      locals: [{ entry: web, pod: p('web', { app: 'web' }, []) }],
      pods: [p('db', { app: 'db' }, ['2001:db8:2::7'])],
      policies: [
        checked(
          networkPolicy('shop/web', {
            podSelector: { matchLabels: { app: 'web' } },
            ingress: [{ from: [{ podSelector: { matchLabels: { app: 'db' } } }] }],
          }),
        ),
      ],
    });
    expect(isolatedForIngress(text, veth('web'))).toBe(true);
    expect(text).toMatch(/set peers_0_v6 \{[^}]*elements = \{ 2001:db8:2::7 \}/);
  });

  it('a pod whose object is unknown (never seen, or its name now has another UID) is isolated', () => {
    const gone = entry('gone', '2001:db8:1::6');
    const moved = entry('moved', '2001:db8:1::7');
    const built = build({
      locals: [
        { entry: gone, pod: undefined },
        { entry: moved, pod: p('moved', { app: 'x' }, ['2001:db8:9::1'], { uid: 'new-uid' }) },
      ],
      pods: [p('moved', { app: 'x' }, ['2001:db8:9::1'], { uid: 'new-uid' })],
    });
    expect(built.unknownPods.sort()).toEqual(['shop/gone', 'shop/moved']);
    // The other pod of that name keeps its own name and addresses as a peer.
    expect(built.state.pods.map((x) => x.metadata.name)).toContain('moved');
    expect(built.state.policies.map((x) => x.metadata.name)).toEqual([UNKNOWN_POD_POLICY]);
    const text = render(translate(built.state));
    expect(isolatedForIngress(text, veth('gone'))).toBe(true);
    expect(isolatedForIngress(text, veth('moved'))).toBe(true);
    expect(text).toContain(`"${veth('gone')}" : jump egress_${veth('gone')}`);
  });

  it('a pod over the label limit matches no selector: no peer anywhere, isolated on its own node, reported on the pod', () => {
    const many = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`l${i}`, 'v']));
    const big = (name: string, ip: string) => p(name, { app: 'web', ...many }, [ip]);
    // Would let any pod without label x (the over-limit pod's stand-in labels too) reach db.
    const open = networkPolicy('shop/db', {
      podSelector: { matchLabels: { app: 'db' } },
      ingress: [
        { from: [{ podSelector: { matchExpressions: [{ key: 'x', operator: 'DoesNotExist' }] } }] },
      ],
    });
    const db = { entry: entry('db', '2001:db8:1::6'), pod: p('db', { app: 'db' }, []) };
    const elsewhere = build({
      locals: [db],
      pods: [big('far', '2001:db8:2::9'), p('near', {}, ['2001:db8:2::8'])],
      policies: [checked(open)],
    });
    expect(elsewhere.state.pods.map((x) => x.metadata.name)).toEqual(['db', 'near']);
    expect(render(translate(elsewhere.state))).not.toContain('2001:db8:2::9');

    const web = { entry: entry('web', '2001:db8:1::5'), pod: big('web', '2001:db8:1::5') };
    const here = build({ locals: [web, db], policies: [checked(open)] });
    expect(here.problems).toEqual([
      {
        kind: 'Pod',
        namespace: 'shop',
        name: 'web',
        uid: web.entry.podUID,
        message:
          'pod shop/web: 66 labels (flock keeps at most 64) — isolated both ways until it has fewer',
        reason: 'PodOverLimit',
      },
    ]);
    expect(here.unknownPods).toEqual([]);
    const text = render(translate(here.state));
    expect(isolatedForIngress(text, veth('web'))).toBe(true);
    expect(text).toContain(`"${veth('web')}" : jump egress_${veth('web')}`);
  });

  it('an attachment being torn down stays isolated both ways, sending from its own addresses only, whatever its pod', () => {
    const half = { ...entry('half', '2001:db8:1::8'), anycast: ['2001:db8:ac::1'] };
    const pod = p('half', { app: 'x' }, ['2001:db8:1::8']);
    const built = build({
      locals: [
        {
          entry: half,
          pod,
          removing: true,
          sources: { addresses: ['2001:db8:1::8'], anycast: [] },
        },
      ],
    });
    expect(built.unknownPods).toEqual([]); // not reported as an unknown pod
    const text = render(translate(built.state));
    expect(isolatedForIngress(text, veth('half'))).toBe(true);
    expect(text).toContain(`"${veth('half')}" : jump egress_${veth('half')}`);
    expect(text).toContain(`"${veth('half')}" . 2001:db8:1::8`); // anti-spoofing: its own address
    expect(text).not.toContain('2001:db8:ac::1');
  });

  it("a pod's hostPorts from its entry become DNAT map elements; none for a pod being torn down", () => {
    const hostPorts = [{ protocol: 'tcp' as const, hostPort: 8080, containerPort: 80 }];
    const web = entry('web', '2001:db8:1::5', { ip4: '192.0.2.5', hostPorts });
    const text = script({ locals: [{ entry: web, pod: p('web', { app: 'web' }, []) }] });
    expect(text).toContain('tcp . 8080 : 2001:db8:1::5 . 80');
    expect(text).toContain('tcp . 8080 : 192.0.2.5 . 80');
    const gone = script({
      locals: [{ entry: web, pod: p('web', { app: 'web' }, []), removing: true }],
    });
    expect(gone).not.toContain('tcp . 8080');
  });

  it('two attachments of one pod (an old sandbox) both get the pod labels; the newest keeps the name', () => {
    const web = p('web', { app: 'web' }, []);
    const old = entry('web', '2001:db8:1::5', { containerID: 'ctr-old' });
    const current = entry('web', '2001:db8:1::8', {
      containerID: 'ctr-new',
      createdAt: '2026-11-29T11:00:00.000Z',
    });
    const { state } = build({
      locals: [
        { entry: old, pod: web },
        { entry: current, pod: web },
      ],
      policies: [
        checked(networkPolicy('shop/deny', { podSelector: { matchLabels: { app: 'web' } } })),
      ],
    });
    const byVeth = Object.fromEntries(state.local.map((l) => [l.interface, l.name]));
    expect(byVeth[hostVethName('ctr-new', 'eth0')]).toBe('web');
    expect(byVeth[hostVethName('ctr-old', 'eth0')]).toBe(`web@${hostVethName('ctr-old', 'eth0')}`);
    const text = render(translate(state));
    expect(isolatedForIngress(text, hostVethName('ctr-new', 'eth0'))).toBe(true);
    expect(isolatedForIngress(text, hostVethName('ctr-old', 'eth0'))).toBe(true);
  });

  it('namespaces the namespace cache has not seen yet are added bare', () => {
    const { state } = build({
      namespaces: [],
      pods: [p('db', {}, ['2001:db8:2::7'], { namespace: 'late' })],
      locals: [{ entry: entry('web', '2001:db8:1::5'), pod: p('web', {}, []) }],
    });
    expect(state.namespaces.map((n) => n.metadata.name)).toEqual(['late', 'shop']);
    expect(() => translate(state)).not.toThrow();
  });

  it('an unenforceable policy is reported where it selects a local pod, and isolates it', () => {
    const tooMany = Array.from({ length: 70 }, (_, i) => `v${i}`);
    const bad = networkPolicy('shop/bad', {
      podSelector: { matchLabels: { app: 'web' } },
      ingress: [
        {
          from: [
            {
              podSelector: { matchExpressions: [{ key: 'app', operator: 'In', values: tooMany }] },
            },
          ],
        },
      ],
    });
    const web = { entry: entry('web', '2001:db8:1::5'), pod: p('web', { app: 'web' }, []) };
    const db = { entry: entry('db', '2001:db8:1::6'), pod: p('db', { app: 'db' }, []) };
    const here = build({ locals: [web, db], policies: [checked(bad)] });
    expect(here.problems).toEqual([
      expect.objectContaining({ namespace: 'shop', name: 'bad', uid: 'uid-np-bad' }),
    ]);
    expect(here.problems[0]!.message).toMatch(
      /networkpolicy shop\/bad: spec\.ingress\[0\]\.from\[0\]\.podSelector\.matchExpressions\[0\]\.values/,
    );
    const text = render(translate(here.state));
    expect(isolatedForIngress(text, veth('web'))).toBe(true);
    expect(isolatedForIngress(text, veth('db'))).toBe(false);
    // On a node without pods it selects, it is not this node's problem.
    expect(build({ locals: [db], policies: [checked(bad)] }).problems).toEqual([]);
  });
});
