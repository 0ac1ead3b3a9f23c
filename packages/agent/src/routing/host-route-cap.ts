// A node announces one host route per pinned, anycast and Service address it carries. A router
// bounds what it takes from a session (import limit, maximum-prefix); a node that crosses it
// loses routes at the router's choice, or its whole session. So the agent caps its own host
// routes below the router's bound: past the cap, the addresses that sort last of the least
// critical class are left out (Service addresses first kept, then anycast, then pinned and
// foreign addresses), with a warning, and the node goes on announcing the rest.
import type { AnnouncementPlan } from './announcements.js';

/** What capHostRoutes left out (empty when under the cap). */
export interface CapResult {
  plan: AnnouncementPlan;
  leftOut: string[];
}

export function capHostRoutes(plan: AnnouncementPlan, max: number): CapResult {
  const total = plan.services.size + plan.anycast.size + plan.hostRoutes.length;
  if (total <= max) return { plan, leftOut: [] };
  let room = max;
  const keep = <T>(list: T[]): T[] => {
    const kept = list.slice(0, Math.max(0, room));
    room -= kept.length;
    return kept;
  };
  const services = new Map(keep([...plan.services]));
  const anycast = new Map(keep([...plan.anycast]));
  const hostRoutes = keep([...plan.hostRoutes]);
  const kept = new Set([...services.keys(), ...anycast.keys(), ...hostRoutes]);
  const leftOut = [...plan.services.keys(), ...plan.anycast.keys(), ...plan.hostRoutes].filter(
    (a) => !kept.has(a),
  );
  const communities = new Map([...plan.communities].filter(([a]) => kept.has(a)));
  const note = `host route cap reached: ${total} addresses, ${max} announced (--max-host-routes); left out: ${leftOut.join(', ')}`;
  return {
    plan: {
      ...plan,
      services,
      anycast,
      hostRoutes,
      communities,
      warnings: [...plan.warnings, note].sort(),
    },
    leftOut,
  };
}
