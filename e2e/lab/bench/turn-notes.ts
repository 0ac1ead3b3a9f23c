// What else happened on the lab during a bench turn, for the turn's report: the routes the
// router deleted (a BFD or BGP session that dropped blackholes a node's pods until it is back)
// and the Warning events of the turn's pods by reason (FailedCreatePodSandBox: the runtime
// tore a sandbox down and tried again).
import { z } from 'zod';
import type { Lab } from '../core/lab.js';
import { routeEvents, type RouteEvent } from '../probes/route-events.js';

const EventList = z.object({
  items: z.array(
    z.looseObject({
      involvedObject: z.looseObject({ name: z.string().optional() }),
      type: z.string().optional(),
      reason: z.string().optional(),
      message: z.string().optional(),
    }),
  ),
});
export type PodEvent = z.infer<typeof EventList>['items'][number];

/** The events in `namespace` about the pods named. */
export async function podEvents(
  lab: Lab,
  namespace: string,
  names: ReadonlySet<string>,
): Promise<PodEvent[]> {
  const raw = await lab.api!.request({
    method: 'GET',
    path: `/api/v1/namespaces/${namespace}/events`,
  });
  return EventList.parse(raw).items.filter((e) => names.has(e.involvedObject.name ?? ''));
}

export interface TurnNotes {
  /** Routes the router deleted during the turn, with the node whose next hop they had. */
  deleted: (RouteEvent & { node: string })[];
  /** Warning events of the turn's pods: reason → count and the first event's message. */
  warnings: Map<string, { count: number; message: string }>;
}

// Expected while pods start (a probe before the server listens): counted, their messages left
// out of the report.
const ROUTINE = new Set(['Unhealthy']);

/** Start watching the router's routes; `stop` collects the notes of the turn. */
export function watchTurn(lab: Lab) {
  const monitor = lab.router!.monitorRoutes(['-ts']);
  const nodeOf = (via: string | undefined) =>
    lab.plans.find((p) => p.node6 === via || p.node4 === via)?.name ?? via ?? '?';
  return {
    /** Stop watching without notes (the turn failed). */
    cancel: () => monitor.stop(),
    async stop(namespace: string, pods: ReadonlySet<string>): Promise<TurnNotes> {
      monitor.stop();
      const deleted = routeEvents(monitor.lines)
        .filter((e) => e.deleted)
        .map((e) => ({ ...e, node: nodeOf(e.via) }));
      const warnings = new Map<string, { count: number; message: string }>();
      for (const e of await podEvents(lab, namespace, pods)) {
        if (e.type !== 'Warning') continue;
        const seen = warnings.get(e.reason ?? '?');
        if (seen) seen.count++;
        else warnings.set(e.reason ?? '?', { count: 1, message: e.message ?? '' });
      }
      return { deleted, warnings };
    },
  };
}

/** One line: "router deleted 2 routes (lab-node-3 2001:db8::/64 at +12.3 s, …); warnings: …". */
export function describeNotes(notes: TurnNotes, t0: number): string {
  const routes = notes.deleted.length
    ? `router deleted ${notes.deleted.length} route(s): ${notes.deleted
        .map((d) => `${d.node} ${d.prefix} at +${((d.at - t0) / 1000).toFixed(1)} s`)
        .join(', ')}`
    : 'router deleted no route';
  const warnings = notes.warnings.size
    ? [...notes.warnings]
        .map(([reason, w]) =>
          ROUTINE.has(reason) ? `${reason} ×${w.count}` : `${reason} ×${w.count} (${w.message})`,
        )
        .join(', ')
    : 'none';
  return `${routes}; pod warnings: ${warnings}`;
}
