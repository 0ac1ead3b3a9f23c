// Helpers of the chart's cluster test: reading objects back (only the fields it checks) and
// starting the real operator and agent processes until they report ready.
import { eventually } from '@flock/testkit';
import { z } from 'zod';
import { startDaemon, type Daemon } from '../shared/daemon.js';

// What the test reads back from the API server: only the fields it looks at, checked.
const Condition = z.looseObject({
  type: z.string(),
  status: z.string(),
  reason: z.string().optional(),
});
export const Read = z.looseObject({
  spec: z.record(z.string(), z.unknown()).default({}),
  status: z
    .looseObject({
      conditions: z.array(Condition).default([]),
      allocations: z.looseObject({ pods: z.number() }).optional(),
    })
    .default({ conditions: [] }),
  items: z.array(z.looseObject({ reason: z.string().optional() })).default([]),
  rules: z.array(z.looseObject({ resourceNames: z.array(z.string()).optional() })).default([]),
});

const tail = (d: Daemon | undefined) => (d?.logs ?? []).slice(-15).join('\n');

/** Start a process; resolves once a log line matches `ready` (rejects if it exits first). */
export async function startUntil(
  file: string,
  args: string[],
  env: Record<string, string>,
  ready: RegExp,
) {
  const d = startDaemon('env', [
    ...Object.entries(env).map(([k, v]) => `${k}=${v}`),
    file,
    ...args,
  ]);
  await eventually(
    `${args[0]} logs ${ready}`,
    async () => {
      if (d.child.exitCode !== null) throw new Error(`exited ${d.child.exitCode}:\n${tail(d)}`);
      return d.logs.some((l) => ready.test(l));
    },
    { timeoutMs: 60_000 },
  );
  return d;
}
