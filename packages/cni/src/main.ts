// The plugin executable: the runtime starts it for every ADD/DEL/CHECK/STATUS/GC/VERSION.
// Bundled into one file (scripts/bundle.mjs) and started by bin/flock; keep imports light.
import { readFileSync } from 'node:fs';
import { runPlugin } from './plugin.js';

function readStdin(): string | Error {
  try {
    return readFileSync(0, 'utf8');
  } catch (e) {
    // No stdin at all (closed descriptor) is fine for VERSION; the others report code 5.
    return (e as NodeJS.ErrnoException).code === 'EBADF' ? '' : (e as Error);
  }
}

const output = await runPlugin({
  env: process.env,
  stdin: readStdin(),
  warn: (line) => process.stderr.write(`${line}\n`),
});
if (output.stdout) process.stdout.write(output.stdout);
process.exitCode = output.exitCode;
