// What a peer relay knows: every peer record of the PeerSlices it watches, and a numbered log of
// the record changes the slices' changes amount to. A slice change (the API server sends it
// whole) becomes one `put` a record that is new or changed and one `del` a record that left
// every slice; each line is encoded once and the same string goes to every agent. The last
// `maxEvents` lines are kept, so an agent that reconnects within them resumes from its position
// instead of receiving every record again.
import { randomUUID } from 'node:crypto';
import type { PeerPod, RelayEvent } from '@flock/api';

/** A slice as the relay reads it: its name, namespace and records. */
export interface SliceRecords {
  metadata: { name: string };
  spec: { namespace: string; pods: PeerPod[] };
}

/** One record as known: its JSON a slice that holds it (a pod moving holds two a moment). */
interface Known {
  ns: string;
  /** The record as last sent. */
  sent: string;
  bySlice: Map<string, string>;
}

const line = (e: RelayEvent) => `${JSON.stringify(e)}\n`;
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
      for (const pod of after.spec.pods) {
        const key = keyOf(ns, pod.name);
        const json = JSON.stringify(pod);
        kept.add(key);
        let k = this.known.get(key);
        if (!k) this.known.set(key, (k = { ns, sent: '', bySlice: new Map() }));
        k.bySlice.set(slice, json);
        if (k.sent !== json) {
          k.sent = json;
          out.push(line({ t: 'put', seq: this.next(), ns, pod }));
        }
      }
    }
    if (before)
      for (const pod of before.spec.pods) {
        const key = keyOf(before.spec.namespace, pod.name);
        const k = this.known.get(key);
        if (kept.has(key) || !k?.bySlice.delete(slice)) continue;
        const other = k.bySlice.values().next();
        if (other.done) {
          this.known.delete(key);
          out.push(line({ t: 'del', seq: this.next(), ns: k.ns, name: pod.name }));
        } else if (other.value !== k.sent) {
          // Still in another slice, which says something else: that is the record now.
          k.sent = other.value;
          const record = JSON.parse(other.value) as PeerPod;
          out.push(line({ t: 'put', seq: this.next(), ns: k.ns, pod: record }));
        }
      }
    if (out.length === 0) return;
    this.lines.push(...out);
    if (this.lines.length > this.maxEvents) {
      const drop = this.lines.length - this.maxEvents;
      this.lines = this.lines.slice(drop);
      this.first += drop;
    }
    const chunk = out.join('');
    for (const l of this.listeners) l(chunk);
  }

  /** Every record, as the lines of a full snapshot (begin, puts, synced). */
  snapshot(): string[] {
    const out = [line({ t: 'begin', epoch: this.epoch, full: true, seq: this.seq })];
    for (const k of this.known.values()) out.push(`{"t":"put","ns":"${k.ns}","pod":${k.sent}}\n`);
    out.push(line({ t: 'synced', seq: this.seq }));
    return out;
  }

  /**
   * The lines after position `since` of this log, begun by a `begin` that says so; undefined
   * when the log no longer holds them all (or the position is of another log): a snapshot then.
   */
  since(epoch: string | undefined, since: number | undefined): string[] | undefined {
    if (epoch !== this.epoch || since === undefined || since > this.seq) return undefined;
    if (since + 1 < this.first) return undefined;
    const begin = line({ t: 'begin', epoch: this.epoch, full: false, seq: since });
    return [begin, ...this.lines.slice(since + 1 - this.first)];
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
