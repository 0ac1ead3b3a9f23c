// Getting a rendered script into the kernel: one `nft -f -` transaction, skipped when the script
// is the one applied last. The kernel call sits behind a one-function interface so callers'
// unit tests can fake it; nftRunner() is the real one (tested in the kernel tier).
import { run } from '@flock/exec';
import { diffTables } from './diff.js';
import { tableScript, type NftTable } from './render.js';

/** Feed a script to nft; rejects when nft refuses it. */
export type NftRun = (script: string) => Promise<void>;

export interface NftRunnerOptions {
  /** Run inside this named network namespace (`ip netns exec`), e.g. in tests. */
  netns?: string;
  /** Only check the script (`nft -c`): the kernel validates it, nothing changes. */
  check?: boolean;
  timeoutMs?: number;
}

const NETNS_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/** The real kernel call: `nft -f -` (or `nft -c -f -`) with the script on stdin. */
export function nftRunner(options: NftRunnerOptions = {}): NftRun {
  const { netns, check = false, timeoutMs = 60_000 } = options;
  if (netns !== undefined && !NETNS_NAME.test(netns))
    throw new Error(`invalid network namespace name ${JSON.stringify(netns)}`);
  const nftArgs = [...(check ? ['-c'] : []), '-f', '-'];
  const [file, args] =
    netns === undefined ? ['nft', nftArgs] : ['ip', ['netns', 'exec', netns, 'nft', ...nftArgs]];
  return async (script) => {
    await run(file, args, { input: script, timeoutMs });
  };
}

/** Validate a script with the kernel without changing anything (`nft -c -f -`). */
export function check(
  script: string,
  options: Omit<NftRunnerOptions, 'check'> = {},
): Promise<void> {
  return nftRunner({ ...options, check: true })(script);
}

/** How applyTable() brought a table into the kernel. */
export type ApplyMode = 'unchanged' | 'diff' | 'replace';

/**
 * Applies tables (or scripts) in order, one at a time, and skips the kernel when nothing changed.
 * applyTable() sends only the difference to the table it applied last (diffTables) when the
 * structure allows it, and the full replace otherwise: the first time, after forget(), after a
 * failure, and when the diff itself fails (e.g. someone removed the table meanwhile).
 */
export class NftApplier {
  private last: string | undefined;
  private lastTable: NftTable | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private modes: Record<ApplyMode, number> = { unchanged: 0, diff: 0, replace: 0 };

  constructor(private readonly runNft: NftRun) {}

  /** The full script of the table in force, as far as this applier knows. */
  get lastApplied(): string | undefined {
    if (this.last === undefined && this.lastTable) this.last = tableScript(this.lastTable);
    return this.last;
  }

  /** How many applyTable() calls ended in each way (for logs and benchmarks). */
  get counts(): Readonly<Record<ApplyMode, number>> {
    return { ...this.modes };
  }

  /** Apply `script` (a full replace); resolves true when nft ran, false when it equals the last one. */
  apply(script: string): Promise<boolean> {
    return this.serial(async () => {
      if (script === this.lastApplied) return false;
      this.forget(); // if nft fails half-way we no longer know what is in force: retry next time
      await this.runNft(script);
      this.last = script;
      return true;
    });
  }

  /** Make `table` the one in force: by a diff when possible, else by a full replace. */
  applyTable(table: NftTable): Promise<ApplyMode> {
    return this.serial(async () => {
      const prev = this.lastTable;
      this.forget();
      const diff = prev ? diffTables(prev, table) : undefined;
      let mode: ApplyMode = diff === '' ? 'unchanged' : 'replace';
      if (diff) {
        try {
          await this.runNft(diff);
          mode = 'diff';
        } catch {
          // Whatever made the diff fail (the table gone, edited by hand), a replace repairs it.
        }
      }
      if (mode === 'replace') await this.runNft(tableScript(table));
      this.lastTable = table;
      this.modes[mode]++;
      return mode;
    });
  }

  /** Make the next apply call nft with the whole table even if unchanged (e.g. the table was removed). */
  forget(): void {
    this.last = undefined;
    this.lastTable = undefined;
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn);
    this.queue = next.catch(() => undefined);
    return next;
  }
}
