// Start-up probe for the bench: zod-full.mjs's schemas with zod/mini, bundled like the plugin.
import process from 'node:process';
import * as z from 'zod/mini';

const conf = z.looseObject({
  cniVersion: z.string(),
  name: z.string().check(z.minLength(1)),
  type: z.literal('flock'),
  socketPath: z.optional(z.string().check(z.startsWith('/'))),
  timeoutMs: z.optional(z.int().check(z.minimum(100), z.maximum(600_000))),
  prevResult: z.optional(z.looseObject({})),
  'cni.dev/valid-attachments': z.optional(
    z.array(z.object({ containerID: z.string(), ifname: z.string() })),
  ),
});
const request = z.object({
  command: z.enum(['ADD', 'DEL', 'CHECK', 'STATUS', 'GC']),
  containerID: z.optional(z.string().check(z.regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}$/))),
  netns: z.optional(z.string().check(z.maxLength(4096), z.regex(/^\/[A-Za-z0-9_./-]*$/))),
  ifName: z.optional(z.string().check(z.regex(/^[A-Za-z0-9_.-]{1,15}$/))),
  args: z._default(
    z.record(z.string().check(z.maxLength(253)), z.string().check(z.maxLength(1024))),
    {},
  ),
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
