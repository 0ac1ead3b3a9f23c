// The last BGP password read from each Secret, on disk beside the allocation store (0600,
// written atomically): BIRD outlives an agent restart, so an agent that starts while the API
// server cannot hand it a Secret still gives BIRD the password its session runs with, instead
// of dropping the peer (and every route learned over it) until the next read succeeds.
import type { Logger } from '@flock/api';
import { FILE_MODE, readFileIfExists, writeFileAtomic } from '@flock/exec';
import { z } from 'zod';

const PasswordFileContent = z.object({
  version: z.literal(1),
  /** namespace/name/key of the Secret → the password read from it. */
  passwords: z.record(z.string(), z.string()),
});

export interface PasswordMemory {
  /** What was saved; empty when there is nothing (or nothing usable) on disk. */
  load(): Promise<Map<string, string>>;
  save(passwords: ReadonlyMap<string, string>): Promise<void>;
}

export function passwordFile(path: string, logger: Logger): PasswordMemory {
  return {
    async load() {
      try {
        const text = await readFileIfExists(path);
        if (text === undefined) return new Map();
        return new Map(Object.entries(PasswordFileContent.parse(JSON.parse(text)).passwords));
      } catch (error) {
        // Only a fallback for unreadable Secrets: a broken file is reported, never fatal.
        logger.error('BGP password file unusable; starting without it', {
          path,
          error: String(error),
        });
        return new Map();
      }
    },
    async save(passwords) {
      const content = { version: 1, passwords: Object.fromEntries(passwords) };
      await writeFileAtomic(path, `${JSON.stringify(content)}\n`, { mode: FILE_MODE });
    },
  };
}
