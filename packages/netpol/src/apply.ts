// Getting a rendered script into the kernel: one `nft -f -` transaction, skipped when the script
// is the one applied last. The kernel call sits behind a one-function interface so callers'
// unit tests can fake it; nftRunner() is the real one (tested in the kernel tier).
import { run } from '@flock/exec';

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

/** Applies scripts in order, one at a time, and skips the kernel when nothing changed. */
export class NftApplier {
  private last: string | undefined;
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly runNft: NftRun) {}

  /** The script in force, as far as this applier knows. */
  get lastApplied(): string | undefined {
    return this.last;
  }

  /** Apply `script`; resolves true when nft ran, false when it equals the last applied one. */
  apply(script: string): Promise<boolean> {
    const next = this.queue.then(async () => {
      if (script === this.last) return false;
      // Forget first: if nft fails half-way we no longer know what is in force, so retry next time.
      this.last = undefined;
      await this.runNft(script);
      this.last = script;
      return true;
    });
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Make the next apply() call nft even if the script is unchanged (e.g. the table was removed). */
  forget(): void {
    this.last = undefined;
  }
}
