// PeerSlice: what NetworkPolicy enforcement needs of the pods of one namespace, published once by
// the operator for every agent. An agent enforces policy for its own node's pods but matches
// peers on every node: watching every Pod whole sends each pod change (≈ 7 KB) to every node.
// A slice holds up to MAX_SLICE_PEERS (20) pods of one namespace as compact records (name, uid,
// node, addresses, labels, named ports, phase; for anycast pods their addresses, Ready and
// terminating), rewritten only when one of those changes — a readiness flap or a status
// heartbeat of an ordinary pod is no change. Cluster-scoped: only the operator writes them,
// no tenant can forge a peer (an agent still checks every address against its node's ranges).
import { z } from 'zod';
import { DnsLabel, DnsSubdomain, ObjectMeta } from './meta.js';
import { ipFamily } from './net.js';
import { ANYCAST_ANNOTATION, API_VERSION, PEERSLICE_KIND } from './names.js';
import { isPodReady, Protocol, type Pod } from './pod.js';
import {
  MAX_ANNOTATION_BYTES,
  MAX_NAMED_PORTS,
  OVERSIZE,
  OVER_LIMIT_LABEL,
  overLimitReason,
} from './pod-limits.js';

/**
 * The most pods a slice holds. Every change of one pod sends its whole slice to every agent: a
 * slice of 100 (an EndpointSlice's default) is ≈ 47 KB, more than the Pod it replaces (6.9 KB);
 * one of 20 is ≈ 10 KB (docs/benchmarks.md, "API fan-out").
 */
export const MAX_SLICE_PEERS = 20;

const PeerIp = z
  .string()
  .max(45)
  .refine((s) => ipFamily(s) !== undefined, 'must be an IPv4 or IPv6 address');

export const PeerPort = z
  .object({
    name: z.string().min(1).max(63).describe('The container port name.'),
    port: z.int().min(1).max(65535).describe('The container port.'),
    protocol: Protocol.optional().describe('TCP (default), UDP or SCTP.'),
  })
  .describe('A named container port (NetworkPolicy ports may name them).');
export type PeerPort = z.infer<typeof PeerPort>;

export const PeerPod = z
  .object({
    name: DnsSubdomain.describe('The pod name.'),
    uid: z.string().min(1).max(128).describe('The pod UID.'),
    node: DnsSubdomain.describe(
      'The node it runs on (its addresses are checked against its ranges).',
    ),
    ips: z.array(PeerIp).min(1).max(2).describe("The pod's addresses (status.podIPs)."),
    labels: z
      .record(z.string().max(317), z.string().max(63))
      .optional()
      .describe("The pod's labels."),
    overLimit: z
      .string()
      .max(128)
      .optional()
      .describe(
        'Set instead of labels and ports when the pod has more than flock keeps: it matches no selector.',
      ),
    ports: z.array(PeerPort).max(MAX_NAMED_PORTS).optional().describe('Named container ports.'),
    phase: z.string().max(32).optional().describe('status.phase.'),
    anycast: z
      .string()
      .max(MAX_ANNOTATION_BYTES)
      .optional()
      .describe('Anycast pods: the flock.fritzlab.net/anycast annotation.'),
    ready: z.boolean().optional().describe('Anycast pods: Ready.'),
    terminating: z.boolean().optional().describe('Anycast pods: being deleted.'),
  })
  .describe('One pod as NetworkPolicy peers need it.');
export type PeerPod = z.infer<typeof PeerPod>;

export const PeerSliceSpec = z
  .object({
    namespace: DnsLabel.describe('The namespace of every pod of the slice.'),
    pods: z
      .array(PeerPod)
      .max(MAX_SLICE_PEERS)
      .default([])
      // Atomic: the operator writes a slice whole, and a map keyed by name would make the API
      // server track (managedFields) and send every record's every field as its own entry
      // (≈ 40 % of a slice's bytes, and its CPU on every write). Names are unique by the
      // publisher; agents take the last of two.
      .meta({ 'x-kubernetes-list-type': 'atomic' })
      .describe('The pods, each once.'),
  })
  .describe('Pods of one namespace.');
export type PeerSliceSpec = z.infer<typeof PeerSliceSpec>;

export const PeerSliceStatus = z.object({}).describe('Reserved: a slice is all spec.');

export const PeerSlice = z.object({
  apiVersion: z.literal(API_VERSION),
  kind: z.literal(PEERSLICE_KIND),
  metadata: ObjectMeta,
  spec: PeerSliceSpec,
  status: PeerSliceStatus.optional(),
});
export type PeerSlice = z.infer<typeof PeerSlice>;

/** Named ports of every container, as policy matches them. */
function namedPorts(pod: Pod): PeerPort[] {
  const out: PeerPort[] = [];
  for (const c of pod.spec?.containers ?? [])
    for (const p of c.ports ?? [])
      if (p.name)
        out.push({
          name: p.name,
          port: p.containerPort,
          ...(p.protocol ? { protocol: p.protocol } : {}),
        });
  return out;
}

/**
 * A pod as a peer record; undefined for a pod that is no peer (host network, no address yet,
 * no node or uid). Only what policy reads, so an unchanged record means nothing to publish.
 */
export function peerOfPod(pod: Pod): PeerPod | undefined {
  const m = pod.metadata;
  const node = pod.spec?.nodeName;
  if (pod.spec?.hostNetwork === true || !node || !m.uid) return undefined;
  const s = pod.status;
  const ips = s?.podIPs?.length ? s.podIPs.map((i) => i.ip) : s?.podIP ? [s.podIP] : [];
  if (ips.length === 0) return undefined;
  const ports = namedPorts(pod);
  const over = overLimitReason(Object.keys(m.labels ?? {}).length, ports.length);
  const anycast = m.annotations?.[ANYCAST_ANNOTATION];
  return {
    name: m.name,
    uid: m.uid,
    node,
    ips: ips.slice(0, 2),
    ...(over ? { overLimit: over } : {}),
    ...(!over && m.labels ? { labels: m.labels } : {}),
    ...(!over && ports.length ? { ports } : {}),
    ...(s?.phase ? { phase: s.phase } : {}),
    ...(anycast === undefined
      ? {}
      : {
          anycast: anycast.length > MAX_ANNOTATION_BYTES ? OVERSIZE : anycast,
          ready: isPodReady(pod),
          terminating: m.deletionTimestamp !== undefined,
        }),
  };
}

/** The pod a peer record stands for, in the shape the API server sends (agents trim it). */
export function podOfPeer(namespace: string, peer: PeerPod): Pod {
  const labels = peer.overLimit ? { [OVER_LIMIT_LABEL]: peer.overLimit } : peer.labels;
  return {
    metadata: {
      name: peer.name,
      namespace,
      uid: peer.uid,
      ...(labels ? { labels } : {}),
      ...(peer.anycast === undefined
        ? {}
        : { annotations: { [ANYCAST_ANNOTATION]: peer.anycast } }),
      // The time is not published: only that it is set.
      ...(peer.terminating ? { deletionTimestamp: '1970-01-01T00:00:00Z' } : {}),
    },
    spec: {
      nodeName: peer.node,
      containers: peer.ports?.length
        ? [
            {
              ports: peer.ports.map((p) => ({
                name: p.name,
                containerPort: p.port,
                ...(p.protocol ? { protocol: p.protocol } : {}),
              })),
            },
          ]
        : [],
    },
    status: {
      ...(peer.phase ? { phase: peer.phase } : {}),
      podIPs: peer.ips.map((ip) => ({ ip })),
      ...(peer.ready === undefined
        ? {}
        : { conditions: [{ type: 'Ready', status: peer.ready ? 'True' : 'False' }] }),
    },
  };
}
