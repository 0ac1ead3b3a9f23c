// The part of a Node the operator reads. Parsing strips everything else (conditions, images,
// capacity), so 5,000 cached Nodes cost little memory and a status heartbeat changes nothing.
// The addresses are for the NodePeers (peer-slices/node-peers.ts).
import { z } from 'zod';

const Timestamp = z.union([z.string(), z.date()]).transform((t) => {
  const d = new Date(t);
  return Number.isNaN(d.getTime()) ? undefined : d.toISOString();
});

export const NodeSchema = z.object({
  apiVersion: z.string().optional(),
  kind: z.string().optional(),
  metadata: z.object({
    name: z.string().min(1),
    uid: z.string().min(1),
    resourceVersion: z.string().optional(),
    labels: z.record(z.string(), z.string()).optional(),
    creationTimestamp: Timestamp.optional(),
  }),
  status: z
    .object({
      addresses: z.array(z.object({ type: z.string(), address: z.string() })).nullish(),
    })
    .nullish(),
});
export type Node = z.infer<typeof NodeSchema>;

/** True when a Node's labels or identity changed (what ownership and peers depend on). */
export function nodeChanged(a: Node, b: Node): boolean {
  if (a.metadata.uid !== b.metadata.uid) return true;
  const la = a.metadata.labels ?? {};
  const lb = b.metadata.labels ?? {};
  const keys = Object.keys(la);
  if (keys.length !== Object.keys(lb).length) return true;
  return keys.some((k) => la[k] !== lb[k]);
}
