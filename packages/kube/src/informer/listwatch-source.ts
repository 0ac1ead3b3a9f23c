// Where a cache gets its objects: paged lists and watch streams of one resource. The interface
// is small so a cache can run on any source; `resourceListWatch` is the one over a KubeTransport
// (the real API server, or the fake one in tests).
import { z } from 'zod';
import { StatusSchema, type Status } from '../core/errors.js';
import { apiVersionOf, resourcePath, type ResourceRef } from '../core/resource.js';
import type { KubeTransport } from '../transport/transport.js';

interface ListOptions {
  /** Page size (the server may return fewer). */
  limit?: number;
  /** Token of the previous page. */
  continue?: string;
  fieldSelector?: string;
  labelSelector?: string;
  signal?: AbortSignal;
}

interface ListPage<T> {
  items: T[];
  /** The collection's resourceVersion to watch from (the first page's, for paged lists). */
  resourceVersion: string;
  /** Set when there are more pages. */
  continue?: string;
}

export interface WatchOptions {
  /** Deliver changes after this version. */
  resourceVersion: string;
  fieldSelector?: string;
  labelSelector?: string;
  /** Ask for BOOKMARK events so a healthy watch is never silent for long. */
  allowWatchBookmarks?: boolean;
  /** Ask the server to end the watch after this long (the cache then reconnects). */
  timeoutSeconds?: number;
  /**
   * A streaming list (WatchList): the server first sends every object as ADDED, then a BOOKMARK
   * annotated INITIAL_EVENTS_END, then the changes (with resourceVersionMatch NotOlderThan).
   */
  sendInitialEvents?: boolean;
  resourceVersionMatch?: 'NotOlderThan';
}

/** The annotation of the BOOKMARK that ends a streaming list's initial events. */
export const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';

export type SourceEvent<T> =
  | { type: 'ADDED' | 'MODIFIED' | 'DELETED'; object: T }
  | {
      type: 'BOOKMARK';
      object: { metadata?: { resourceVersion?: string; annotations?: Record<string, string> } };
    }
  | { type: 'ERROR'; object: Status };

export interface ListWatchSource<T = unknown> {
  /** For logs, e.g. "pods (spec.nodeName=n1)". */
  readonly description: string;
  list(options: ListOptions): Promise<ListPage<T>>;
  /** Same contract as KubeTransport.watch: onDone once, nothing after abort. */
  watch(
    options: WatchOptions,
    onEvent: (event: SourceEvent<T>) => void,
    onDone: (err?: unknown) => void,
  ): () => void;
}

const ListSchema = z.object({
  metadata: z.looseObject({
    resourceVersion: z.string().min(1),
    continue: z.string().optional(),
  }),
  items: z.array(z.looseObject({})).nullable(),
});

const BookmarkSchema = z.looseObject({
  metadata: z
    .looseObject({
      resourceVersion: z.string().optional(),
      annotations: z.record(z.string(), z.string()).optional(),
    })
    .optional(),
});

/** List/watch one resource through a transport, optionally in one namespace. */
export function resourceListWatch(
  transport: KubeTransport,
  resource: ResourceRef,
  options: { namespace?: string } = {},
): ListWatchSource<Record<string, unknown>> {
  const path = resourcePath(resource, options.namespace ? { namespace: options.namespace } : {});
  const apiVersion = apiVersionOf(resource);
  return {
    description: `${resource.plural}${options.namespace ? ` in ${options.namespace}` : ''}`,
    async list(o) {
      const raw = await transport.request({
        method: 'GET',
        path,
        query: {
          limit: o.limit,
          continue: o.continue,
          fieldSelector: o.fieldSelector || undefined,
          labelSelector: o.labelSelector || undefined,
        },
        ...(o.signal ? { signal: o.signal } : {}),
      });
      const list = ListSchema.parse(raw);
      // Typed lists omit apiVersion/kind on their items; put them back so schemas can check them.
      const items = (list.items ?? []).map((item) => ({
        apiVersion,
        kind: resource.kind,
        ...item,
      }));
      return {
        items,
        resourceVersion: list.metadata.resourceVersion,
        ...(list.metadata.continue ? { continue: list.metadata.continue } : {}),
      };
    },
    watch(o, onEvent, onDone) {
      return transport.watch(
        {
          path,
          query: {
            resourceVersion: o.resourceVersion,
            allowWatchBookmarks: o.allowWatchBookmarks,
            timeoutSeconds: o.timeoutSeconds,
            sendInitialEvents: o.sendInitialEvents,
            resourceVersionMatch: o.resourceVersionMatch,
            fieldSelector: o.fieldSelector || undefined,
            labelSelector: o.labelSelector || undefined,
          },
        },
        (e) => {
          if (e.type === 'ERROR') {
            const status = StatusSchema.safeParse(e.object);
            onEvent({
              type: 'ERROR',
              object: status.success ? status.data : { message: JSON.stringify(e.object) },
            });
          } else if (e.type === 'BOOKMARK') {
            const bookmark = BookmarkSchema.safeParse(e.object);
            onEvent({ type: 'BOOKMARK', object: bookmark.success ? bookmark.data : {} });
          } else onEvent({ type: e.type, object: e.object });
        },
        onDone,
      );
    },
  };
}
