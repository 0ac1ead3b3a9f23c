// The peer relay's wire protocol: what NetworkPolicy peers an agent reads from a relay instead
// of watching every PeerSlice (docs/architecture.md, "The peer relay"). The API server sends a
// whole slice (≈ 10 KB for 20 pods) to every watcher on any change of one of its pods; a relay
// holds one watch of the slices and sends each agent only the record that changed (≈ 0.3 KB).
//
// One HTTPS GET of RELAY_PATH, answered with newline-delimited JSON, one event a line:
//   begin  {full: true}  then one `put` a record (no seq), then `synced` with the position;
//          {full: false} the agent's position (epoch and seq) was still in the relay's log:
//          the events after it follow, nothing is sent again;
//   put    a record is new or changed; del: a record is gone; both numbered (seq + 1 each);
//   tick   nothing happened, the relay is alive (its position), every RELAY_TICK_MS.
import { z } from 'zod';
import { DnsLabel, DnsSubdomain } from './meta.js';
import { PeerPod } from './peer-slice.js';

export const RELAY_PATH = '/v1/peers';
/** The relay's port unless told otherwise (it runs on the host network: one a node at most). */
export const RELAY_PORT = 5474;
/** How often a relay says it is alive on an idle stream; an agent gives up after 3 missed. */
export const RELAY_TICK_MS = 10_000;
/** The longest line a relay sends (a record is ≤ 32 KiB by PeerPod's limits; with slack). */
export const MAX_RELAY_LINE = 256 * 1024;

const Seq = z.int().min(0);
/** A relay's identity for the life of its log: positions of another log mean nothing. */
export const RelayEpoch = z.string().regex(/^[0-9a-f-]{8,64}$/);

export const RelayEvent = z.discriminatedUnion('t', [
  z.object({ t: z.literal('begin'), epoch: RelayEpoch, full: z.boolean(), seq: Seq }),
  z.object({ t: z.literal('put'), seq: Seq.optional(), ns: DnsLabel, pod: PeerPod }),
  z.object({ t: z.literal('del'), seq: Seq, ns: DnsLabel, name: DnsSubdomain }),
  z.object({ t: z.literal('synced'), seq: Seq }),
  z.object({ t: z.literal('tick'), seq: Seq }),
]);
export type RelayEvent = z.infer<typeof RelayEvent>;

/** The query of a GET that resumes from a position (none: a full snapshot). */
export const RelayQuery = z.object({
  epoch: RelayEpoch.optional(),
  since: z.coerce.number().pipe(Seq).optional(),
});
export type RelayQuery = z.infer<typeof RelayQuery>;
