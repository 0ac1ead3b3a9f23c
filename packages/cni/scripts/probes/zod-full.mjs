// Start-up probe for the bench: the plugin's request schemas written with full zod, bundled
// like the plugin. Compare with zod-mini.mjs (same schemas, zod/mini): why cni.ts uses zod/mini.
import process from 'node:process';
import { z } from 'zod';

const conf = z.looseObject({
  cniVersion: z.string(),
  name: z.string().min(1),
  type: z.literal('flock'),
  socketPath: z.string().startsWith('/').optional(),
  timeoutMs: z.int().min(100).max(600_000).optional(),
  prevResult: z.looseObject({}).optional(),
  'cni.dev/valid-attachments': z
    .array(z.object({ containerID: z.string(), ifname: z.string() }))
    .optional(),
});
const request = z.object({
  command: z.enum(['ADD', 'DEL', 'CHECK', 'STATUS', 'GC']),
  containerID: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}$/)
    .optional(),
  netns: z
    .string()
    .max(4096)
    .regex(/^\/[A-Za-z0-9_./-]*$/)
    .optional(),
  ifName: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,15}$/)
    .optional(),
  args: z.record(z.string().max(253), z.string().max(1024)).default({}),
  config: conf,
});
const ok = request.safeParse({
  command: 'ADD',
  containerID: 'c0ffee42',
  netns: '/run/netns/x',
  ifName: 'eth0',
  config: { cniVersion: '1.1.0', name: 'flock', type: 'flock' },
}).success;
process.exitCode = ok ? 0 : 1;
