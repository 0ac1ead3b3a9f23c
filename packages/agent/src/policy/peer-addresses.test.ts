import { ADDRESSCLAIM_KIND, API_VERSION, claimName, type AddressClaim, type Pod } from '@flock/api';
import { render, translate } from '@flock/netpol';
import { describe, expect, it } from 'vitest';
import { CachedPod } from '../node/pods.js';
import { PolicyNamespace } from './caches.js';
import { PeerAddresses } from './peer-addresses.js';
import { prefixes, type NodeRanges } from './peer-ranges.js';
import { buildPolicyState } from './state.js';
import { checkPolicy } from './validate.js';
import { allowFrom, entry, namespace, pod } from '../../testing/policy.js';

/** Node b: a /64 and an IPv4 slice; the pool's pinned range. */
const NODES: Record<string, NodeRanges> = {
  'node-a': { own: prefixes(['2001:db8:a::/64', '198.51.100.0/28']), pinned: [] },
  'node-b': {
    own: prefixes(['2001:db8:b::/64', '198.51.100.16/28']),
    pinned: prefixes(['2001:db8:200::/120', '203.0.113.0/28']),
  },
};

/** A running pod of namespace shop on `node` (undefined: on none). */
function peer(name: string, ips: string[], node: string | undefined = 'node-b', uid?: string) {
  const raw = pod(name, { app: 'client' }, ips, uid ? { uid } : {});
  return CachedPod.parse({ ...raw, spec: { ...raw.spec, ...(node ? { nodeName: node } : {}) } });
}

/** Pinned claims: address → the UID of the pod holding it. */
function claims(held: Record<string, string>) {
  return (address: string): AddressClaim | undefined => {
    const uid = held[address];
    if (!uid) return undefined;
    return {
      apiVersion: API_VERSION,
      kind: ADDRESSCLAIM_KIND,
      metadata: { name: claimName(address) },
      spec: {
        address,
        kind: 'Pinned',
        namespace: 'shop',
        key: 'Pod/x',
        holders: [{ node: 'node-b', pod: 'x', uid }],
      },
    };
  };
}

function check(over: { otherRanges?: string[]; held?: Record<string, string> } = {}) {
  const reports: { pod: string; addresses: string[] }[] = [];
  const peers = new PeerAddresses({
    nodeRanges: (node) => NODES[node],
    ...(over.otherRanges ? { otherRanges: over.otherRanges } : {}),
    ...(over.held ? { claimOf: claims(over.held) } : {}),
    ignored: (p, addresses) => reports.push({ pod: p.metadata.name, addresses }),
  });
  return { peers, reports };
}

const ips = (p: Pod | undefined) => p?.status?.podIPs?.map((i) => i.ip);

/** The elements of every set of a rendered table, by set name. */
function sets(script: string): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const m of script.matchAll(/set (\S+) \{[^}]*?elements = \{ ([^}]*) \}/g))
    out[m[1]!] = m[2]!.split(', ');
  return out;
}

describe('peer pod addresses', () => {
  it('policy allows a peer only by the addresses inside its node’s ranges, both families', () => {
    const web = entry('web', '2001:db8:a::5', { ip4: '198.51.100.5' });
    const { peers, reports } = check();
    const state = buildPolicyState({
      namespaces: [PolicyNamespace.parse(namespace('shop'))],
      pods: [
        peer('good', ['2001:db8:b::7', '198.51.100.20']),
        // Outside every range: an outside host's addresses.
        peer('outside', ['2001:db8:ff::9', '192.0.2.99']),
        // Node a's addresses (another node's pods) claimed by a pod of node b.
        peer('thief', ['2001:db8:a::8', '198.51.100.6']),
        // One address of each kind: only the IPv4 one inside node b's slice counts.
        peer('mixed', ['2001:db8:ff::10', '198.51.100.26']),
      ],
      policies: [checkPolicy(allowFrom('shop/web', 'web', 'client'))!],
      locals: [{ entry: web, pod: CachedPod.parse(pod('web', { app: 'web' }, [])) }],
      admitPeer: peers.pass(),
    }).state;
    // The peers are in the allow sets of web's ingress rule; nothing else is.
    const { peers_0_v6, peers_0_v4 } = sets(render(translate(state)));
    expect(peers_0_v6).toEqual(['2001:db8:b::7']);
    expect(peers_0_v4).toEqual(['198.51.100.20', '198.51.100.26']);
    expect(state.pods.map((p) => p.metadata.name)).toEqual(['web', 'good', 'mixed']);
    expect(reports).toEqual([
      { pod: 'outside', addresses: ['2001:db8:ff::9', '192.0.2.99'] },
      { pod: 'thief', addresses: ['2001:db8:a::8', '198.51.100.6'] },
      { pod: 'mixed', addresses: ['2001:db8:ff::10'] },
    ]);
  });

  it('keeps a pod whose addresses are all usable as it is, and drops one with none', () => {
    const admit = check().peers.pass();
    const good = peer('good', ['2001:db8:b::7', '198.51.100.20']);
    expect(admit(good)).toBe(good); // the same object: netpol's per-pod memo still holds
    expect(admit(peer('bad', ['2001:db8:ff::9']))).toBeUndefined();
    const mixed = admit(peer('mixed', ['2001:db8:ff::10', '198.51.100.26']));
    expect(ips(mixed)).toEqual(['198.51.100.26']);
    expect(mixed?.metadata).toMatchObject({ name: 'mixed', namespace: good.metadata.namespace });
  });

  it('reads status.podIP when a pod has no podIPs', () => {
    const admit = check().peers.pass();
    const raw = pod('old', { app: 'client' }, []);
    const old = (ip: string) =>
      CachedPod.parse({ ...raw, spec: { ...raw.spec, nodeName: 'node-b' }, status: { podIP: ip } });
    expect(admit(old('2001:db8:b::7'))).toBeDefined();
    expect(admit(old('2001:db8:ff::7'))).toBeUndefined();
  });

  it('a pinned address counts only for the pod that holds its claim, as the claims change', () => {
    const held: Record<string, string> = { '2001:db8:200::10': 'uid-holder' };
    const { peers, reports } = check({ held });
    const holder = peer('holder', ['2001:db8:200::10', '198.51.100.22'], 'node-b', 'uid-holder');
    const other = peer('other', ['2001:db8:200::10', '198.51.100.23'], 'node-b', 'uid-other');
    let admit = peers.pass();
    expect(ips(admit(holder))).toEqual(['2001:db8:200::10', '198.51.100.22']);
    expect(ips(admit(other))).toEqual(['198.51.100.23']);
    // The claim passes to the other pod: the same pod objects are decided again.
    held['2001:db8:200::10'] = 'uid-other';
    admit = peers.pass();
    expect(ips(admit(holder))).toEqual(['198.51.100.22']);
    expect(ips(admit(other))).toEqual(['2001:db8:200::10', '198.51.100.23']);
    expect(reports).toEqual([
      { pod: 'other', addresses: ['2001:db8:200::10'] },
      { pod: 'holder', addresses: ['2001:db8:200::10'] },
    ]);
  });

  it('pods of nodes flock does not run count only inside the other pod ranges', () => {
    const none = check().peers.pass();
    expect(none(peer('far', ['2001:db8:f0::1'], 'node-x'))).toBeUndefined();
    expect(none(peer('unscheduled', ['2001:db8:f0::1'], undefined))).toBeUndefined();
    const admit = check({ otherRanges: ['2001:db8:f0::/48', '10.0.0.0/8'] }).peers.pass();
    const far = peer('far', ['2001:db8:f0::1', '10.1.2.3'], 'node-x');
    expect(admit(far)).toBe(far);
    // A node flock runs is held to its own ranges, not the others'.
    expect(admit(peer('near', ['2001:db8:f0::2'], 'node-b'))).toBeUndefined();
  });

  it('reports each ignored address of a pod once, again only after the pod was gone for a pass', () => {
    const { peers, reports } = check();
    const bad = peer('bad', ['2001:db8:ff::9']);
    peers.pass()(bad);
    peers.pass()(bad);
    peers.pass()(peer('bad', ['2001:db8:ff::9'])); // a new object of the same pod
    expect(reports).toEqual([{ pod: 'bad', addresses: ['2001:db8:ff::9'] }]);
    peers.pass()(peer('bad', ['2001:db8:ff::9', '192.0.2.1'])); // one more address
    expect(reports.at(-1)).toEqual({ pod: 'bad', addresses: ['192.0.2.1'] });
    peers.pass(); // a pass without it
    peers.pass()(bad);
    expect(reports).toHaveLength(3);
  });
});
