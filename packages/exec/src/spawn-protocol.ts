// The line protocol between a SpawnServer and its child: one JSON object per line each way.
import { z } from 'zod';

export const SpawnRequest = z.object({
  id: z.int().min(0),
  file: z.string().min(1),
  args: z.array(z.string()),
  input: z.string().optional(),
  timeoutMs: z.int().min(1).optional(),
  env: z.record(z.string(), z.string()).optional(),
  cwd: z.string().optional(),
  okCodes: z.array(z.int()).optional(),
});
export type SpawnRequest = z.infer<typeof SpawnRequest>;

export const SpawnReply = z.union([
  z.object({
    id: z.int(),
    ok: z.literal(true),
    stdout: z.string(),
    stderr: z.string(),
    code: z.int(),
  }),
  z.object({
    id: z.int(),
    ok: z.literal(false),
    /** CommandError's fields; code null when the program never ran or was killed. */
    code: z.int().nullable(),
    stdout: z.string(),
    stderr: z.string(),
    detail: z.string(),
  }),
]);
export type SpawnReply = z.infer<typeof SpawnReply>;
