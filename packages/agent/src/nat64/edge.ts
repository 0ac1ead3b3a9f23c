// The translator's real edge: programs run with argument arrays (in --host-netns when set), files
// written atomically, Tayga's stderr (it runs with -d: messages there, not to syslog) in the
// agent's log.
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import type { Logger } from '@flock/api';
import { readFileIfExists, run, writeFileAtomic } from '@flock/exec';
import type { TranslatorEdge } from './translator.js';

export function hostTranslatorEdge(logger: Logger, netns?: string): TranslatorEdge {
  const inNetns = (file: string, args: readonly string[]): [string, string[]] =>
    netns ? ['ip', ['netns', 'exec', netns, file, ...args]] : [file, [...args]];
  return {
    run: (file, args, options) => run(...inNetns(file, args), options),
    spawn: (file, args) => {
      const child = spawn(...inNetns(file, args), { stdio: ['ignore', 'ignore', 'pipe'] });
      createInterface({ input: child.stderr }).on('line', (line) =>
        logger.info('tayga', { line: line.slice(0, 512) }),
      );
      child.on('error', (e) =>
        logger.error('NAT64 translator: spawn failed', { error: e.message }),
      );
      return child;
    },
    writeFile: (path, text) => writeFileAtomic(path, text),
    readFile: readFileIfExists,
    cmdline: async (pid) => {
      const raw = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => undefined);
      return raw ? raw.split('\0').filter(Boolean) : undefined;
    },
    kill: (pid, signal) => process.kill(pid, signal),
  };
}
