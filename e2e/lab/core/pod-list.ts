// The fields of a Pod list the lab and its benchmarks read (a zod schema at the boundary: what
// the API returns).
import { z } from 'zod';

export const PodList = z.object({
  items: z.array(
    z.looseObject({
      metadata: z.looseObject({
        name: z.string(),
        namespace: z.string(),
        uid: z.string().optional(),
        labels: z.record(z.string(), z.string()).optional(),
      }),
      spec: z.looseObject({
        nodeName: z.string().optional(),
        hostNetwork: z.boolean().optional(),
      }),
      status: z
        .looseObject({
          phase: z.string().optional(),
          podIPs: z.array(z.object({ ip: z.string() })).optional(),
          conditions: z.array(z.looseObject({ type: z.string(), status: z.string() })).optional(),
          containerStatuses: z
            .array(
              z.looseObject({
                name: z.string().optional(),
                containerID: z.string().optional(),
                ready: z.boolean().optional(),
                state: z
                  .looseObject({
                    running: z.object({ startedAt: z.string() }).optional(),
                  })
                  .optional(),
              }),
            )
            .optional(),
        })
        .optional(),
    }),
  ),
});
export type LabPod = z.infer<typeof PodList>['items'][number];

/** The pod's Ready condition is True. */
export const isPodReady = (p: LabPod) =>
  p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true;
