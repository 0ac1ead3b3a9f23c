// What a peer relay knows: every peer record of the PeerSlices it watches, and a numbered log of
// the record changes the slices' changes amount to. A slice change (the API server sends it
// whole) becomes one `put` a record that is new or changed and one `del` a record that left
// every slice; each line is encoded once and the same string goes to every agent. At least the
// last `maxEvents` lines are kept, so an agent that reconnects within them resumes from its
// position instead of receiving every record again.
import { randomUUID } from 'node:crypto';
import type { PeerPod, RelayEvent } from '@flock/api';

/** A record as the relay keeps it: its name and its JSON, encoded once (lines share the string). */
export interface RecordJson {
  name: string;
  json: string;
}

/** A slice as the relay keeps it: its name, namespace and records. */
export interface SliceRecords {
  metadata: { name: string };
  spec: { namespace: string; pods: RecordJson[] };
}

/** A PeerSlice's records as the relay keeps them (no parsed record: 150,000 of them are heavy). */
export function sliceRecords(
  name: string,
  namespace: string,
  pods: readonly PeerPod[],
): SliceRecords {
  return {
    metadata: { name },
    spec: { namespace, pods: pods.map((p) => ({ name: p.name, json: JSON.stringify(p) })) },
  };
}

/** One record as known: the slices that hold it and its JSON in each (a pod moving: two). */
interface Known {
  ns: string;
  /** The record as last sent. */
  sent: string;
  /** slice, json, slice, json, ...: one pair nearly always (no Map a record). */
  holders: string[];
}

const line = (e: RelayEvent) => `${JSON.stringify(e)}\n`;
/** A put line around a record's JSON as kept (the schema made `ns` a DNS label: no escaping). */
const putLine = (ns: string, json: string, seq?: number) =>
  `{"t":"put",${seq === undefined ? '' : `"seq":${seq},`}"ns":"${ns}","pod":${json}}\n`;

/** `slice` holds the record as `json`. */
function hold(holders: string[], slice: string, json: string): void {
  const at = holders.indexOf(slice);
  if (at >= 0 && at % 2 === 0) holders[at + 1] = json;
  else holders.push(slice, json);
}

/** `slice` no longer holds the record; false when it did not. */
function release(holders: string[], slice: string): boolean {
  for (let at = 0; at < holders.length; at += 2)
    if (holders[at] === slice) {
      holders.splice(at, 2);
      return true;
    }
  return false;
}

/** A reader of the log fell behind what the log keeps (since()). */
export class LogOverrun extends Error {
  constructor(seq: number) {
    super(`change ${seq} is no longer in the log`);
  }
}
const keyOf = (ns: string, name: string) => `${ns}/${name}`;

export class PeerLog {
  readonly epoch = randomUUID();
  /** The number of the last change (0: none yet). */
  seq = 0;
  private readonly known = new Map<string, Known>();
  /** The last lines, in order: lines[i] is change number first + i. */
  private lines: string[] = [];
  private first = 1;
  private readonly listeners = new Set<(lines: string) => void>();

  constructor(private readonly maxEvents = 100_000) {}

  get size(): number {
    return this.known.size;
  }

  /** A slice was added, changed or deleted: log what that changes of its records. */
  applySlice(before: SliceRecords | undefined, after: SliceRecords | undefined): void {
    const slice = (after ?? before)?.metadata.name ?? '';
    const out: string[] = [];
    const kept = new Set<string>();
    if (after) {
      const ns = after.spec.namespace;
      for (const { name, json } of after.spec.pods) {
        const key = keyOf(ns, name);
        kept.add(key);
        let k = this.known.get(key);
        if (!k) this.known.set(key, (k = { ns, sent: '', holders: [] }));
        hold(k.holders, slice, json);
        if (k.sent !== json) {
          k.sent = json;
          out.push(putLine(ns, json, this.next()));
        }
      }
    }
    if (before)
      for (const { name } of before.spec.pods) {
        const key = keyOf(before.spec.namespace, name);
        const k = this.known.get(key);
        if (kept.has(key) || !k || !release(k.holders, slice)) continue;
        const other = k.holders[1];
        if (other === undefined) {
          this.known.delete(key);
          out.push(line({ t: 'del', seq: this.next(), ns: k.ns, name }));
        } else if (other !== k.sent) {
          // Still in another slice, which says something else: that is the record now.
          k.sent = other;
          out.push(putLine(k.ns, other, this.next()));
        }
      }
    if (out.length === 0) return;
    this.lines.push(...out);
    // Trimmed by an eighth at a time, not a copy of the log for every change past the limit.
    if (this.lines.length > this.maxEvents + Math.ceil(this.maxEvents / 8)) {
      const drop = this.lines.length - this.maxEvents;
      this.lines = this.lines.slice(drop);
      this.first += drop;
    }
    const chunk = out.join('');
    for (const l of this.listeners) l(chunk);
  }

  /**
   * Every record, as the lines of a full snapshot (begin, puts, synced), made as they are read:
   * hundreds of agents may read one at once, and a copy of 150,000 lines each would be gigabytes.
   * Begin and synced say the position now; the records are read as they are when reached, so
   * one changed meanwhile may show its newer value (or be missing, deleted, or shown twice,
   * deleted and added again): the changes after the position, which the agent receives next,
   * bring each record to its last value all the same.
   */
  snapshot(): IterableIterator<string> {
    const seq = this.seq;
    const epoch = this.epoch;
    const records = this.known.values();
    return (function* () {
      yield line({ t: 'begin', epoch, full: true, seq });
      for (const k of records) yield putLine(k.ns, k.sent);
      yield line({ t: 'synced', seq });
    })();
  }

  /**
   * The lines after position `since` of this log up to the position now, begun by a `begin` that
   * says so, read from the log as they are sent; undefined when the log no longer holds them all
   * (or the position is of another log): a snapshot then. Reading on after the log dropped a
   * line not sent yet throws LogOverrun (the agent comes back, and resumes or starts over).
   */
  since(
    epoch: string | undefined,
    since: number | undefined,
  ): IterableIterator<string> | undefined {
    if (epoch !== this.epoch || since === undefined || since > this.seq) return undefined;
    if (since + 1 < this.first) return undefined;
    const begin = line({ t: 'begin', epoch: this.epoch, full: false, seq: since });
    const last = this.seq;
    const at = (n: number) => {
      if (n < this.first) throw new LogOverrun(n);
      return this.lines[n - this.first] as string;
    };
    return (function* () {
      yield begin;
      for (let n = since + 1; n <= last; n++) yield at(n);
    })();
  }

  tick(): string {
    return line({ t: 'tick', seq: this.seq });
  }

  /** Lines of every change from now on, as they are logged (a string of one or more lines). */
  subscribe(listener: (lines: string) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private next(): number {
    return ++this.seq;
  }
}
