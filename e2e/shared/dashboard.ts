// The Grafana dashboard the chart ships (charts/flock/files/dashboard.json), as the tests read
// it: its panels and their Prometheus queries.
import { z } from 'zod';

const Target = z.looseObject({ refId: z.string(), expr: z.string().min(1) });
const Panel = z.looseObject({
  id: z.int(),
  type: z.string(),
  title: z.string(),
  targets: z.array(Target).optional(),
});
export const Dashboard = z.looseObject({
  uid: z.string(),
  title: z.string(),
  panels: z.array(Panel),
});
export type Dashboard = z.infer<typeof Dashboard>;

/** Every query of every panel (rows have none), named "panel title/refId". */
export function dashboardQueries(d: Dashboard): { panel: string; expr: string }[] {
  return d.panels
    .filter((p) => p.type !== 'row')
    .flatMap((p) => {
      if (!p.targets?.length) throw new Error(`panel ${p.title} has no query`);
      return p.targets.map((t) => ({ panel: `${p.title}/${t.refId}`, expr: t.expr }));
    });
}
