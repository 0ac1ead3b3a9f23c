// Kubernetes Events (events.k8s.io/v1) for facts a user should see in `kubectl describe` /
// `kubectl get events`. The same event about the same object within a window is aggregated:
// its series count goes up on the existing Event instead of creating a new object. Recording
// never throws: a failed write is logged (events are best effort, the work is not).
import { systemClock, type Clock } from '../core/clock.js';
import { errorMessage, isNotFound } from '../core/errors.js';
import { microTime } from '../control/lease-store.js';
import type { Logger } from '../core/logger.js';
import { mergePatch } from './apply.js';
import { EVENTS, resourcePath } from '../core/resource.js';
import type { KubeTransport } from '../transport/transport.js';

type EventType = 'Normal' | 'Warning';

/** The object an event is about. */
export interface EventSubject {
  apiVersion?: string;
  kind?: string;
  metadata: { name?: string; namespace?: string; uid?: string };
}

export interface EventInput {
  type: EventType;
  /** One CamelCase word, e.g. PrefixAllocated. */
  reason: string;
  /** What the controller did or failed to do, e.g. Allocate. */
  action: string;
  /** A sentence for humans (cut to 1024 bytes). */
  note: string;
}

interface EventRecorderOptions {
  transport: KubeTransport;
  /** e.g. "flock.fritzlab.net/operator". */
  reportingController: string;
  /** This process, e.g. the pod name. */
  reportingInstance: string;
  logger: Logger;
  /** Same event within this window increments a count (default 10 min). */
  aggregationWindowMs?: number;
  /** Namespace of events about cluster-scoped objects (default "default", as client-go). */
  clusterEventNamespace?: string;
  clock?: Clock;
}

interface Series {
  namespace: string;
  name: string;
  body: Record<string, unknown>;
  count: number;
  last: number;
  created: boolean;
  dirty: boolean;
  inflight: Promise<void> | undefined;
}

const MAX_SERIES = 4096;

export class EventRecorder {
  private readonly series = new Map<string, Series>();
  private readonly clock: Clock;
  private readonly windowMs: number;
  private seq = 0;

  constructor(private readonly options: EventRecorderOptions) {
    this.clock = options.clock ?? systemClock;
    this.windowMs = options.aggregationWindowMs ?? 10 * 60_000;
    for (const [what, v] of [
      ['reportingController', options.reportingController],
      ['reportingInstance', options.reportingInstance],
    ] as const) {
      if (!v || v.length > 128) throw new Error(`event ${what} must be 1..128 characters`);
    }
  }

  /** Record an event; resolves when it is written (or the write failed and was logged). */
  event(subject: EventSubject, input: EventInput): Promise<void> {
    const { name, namespace, uid } = subject.metadata;
    if (!name || !subject.kind) {
      this.options.logger.error('event about an object without kind or name dropped', {
        reason: input.reason,
      });
      return Promise.resolve();
    }
    const now = this.clock.now();
    this.prune(now);
    const note = truncateUtf8(input.note, 1024);
    const key = JSON.stringify([
      subject.kind,
      namespace,
      name,
      uid,
      input.type,
      input.reason,
      input.action,
      note,
    ]);
    const existing = this.series.get(key);
    if (existing) {
      existing.count++;
      existing.last = now;
      return this.write(existing);
    }
    const eventNamespace = namespace || (this.options.clusterEventNamespace ?? 'default');
    const s: Series = {
      namespace: eventNamespace,
      name: this.eventName(name, now),
      body: {
        regarding: {
          ...(subject.apiVersion ? { apiVersion: subject.apiVersion } : {}),
          kind: subject.kind,
          name,
          ...(namespace ? { namespace } : {}),
          ...(uid ? { uid } : {}),
        },
        type: input.type,
        reason: input.reason.slice(0, 128),
        action: input.action.slice(0, 128),
        note,
        reportingController: this.options.reportingController,
        reportingInstance: this.options.reportingInstance,
        eventTime: microTime(now),
      },
      count: 1,
      last: now,
      created: false,
      dirty: false,
      inflight: undefined,
    };
    this.series.set(key, s);
    return this.write(s);
  }

  /** Coalesce: while one write of a series runs, later occurrences are folded into one more. */
  private write(s: Series): Promise<void> {
    if (s.inflight) {
      s.dirty = true;
      return s.inflight;
    }
    const run = async () => {
      try {
        do {
          s.dirty = false;
          await this.writeOnce(s);
        } while (s.dirty);
      } finally {
        s.inflight = undefined;
      }
    };
    s.inflight = run();
    return s.inflight;
  }

  private async writeOnce(s: Series): Promise<void> {
    const series =
      s.count > 1 ? { series: { count: s.count, lastObservedTime: microTime(s.last) } } : {};
    try {
      if (s.created) {
        try {
          await mergePatch(this.options.transport, EVENTS, s.name, s.namespace, series);
          return;
        } catch (err) {
          if (!isNotFound(err)) throw err;
          s.name = this.eventName(
            String((s.body['regarding'] as { name: string }).name),
            this.clock.now(),
          );
        }
      }
      await this.options.transport.request({
        method: 'POST',
        path: resourcePath(EVENTS, { namespace: s.namespace }),
        body: {
          apiVersion: 'events.k8s.io/v1',
          kind: 'Event',
          metadata: { name: s.name, namespace: s.namespace },
          ...s.body,
          ...series,
        },
      });
      s.created = true;
    } catch (err) {
      this.options.logger.warn('could not record event', {
        reason: s.body['reason'],
        event: `${s.namespace}/${s.name}`,
        err: errorMessage(err),
      });
    }
  }

  /** "<object name>.<hex nanoseconds>", unique per recorder, at most 253 characters. */
  private eventName(objectName: string, now: number): string {
    const suffix = (BigInt(now) * 1_000_000n + BigInt(this.seq++ % 1_000_000)).toString(16);
    return `${objectName.slice(0, 252 - suffix.length)}.${suffix}`;
  }

  private prune(now: number): void {
    for (const [key, s] of this.series) {
      if (now - s.last > this.windowMs || this.series.size > MAX_SERIES) {
        if (!s.inflight) this.series.delete(key);
      }
    }
  }
}

function truncateUtf8(text: string, maxBytes: number): string {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= maxBytes) return text;
  return buf
    .subarray(0, maxBytes)
    .toString('utf8')
    .replace(/\uFFFD$/, '');
}
