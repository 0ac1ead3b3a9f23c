// The agent's record of which container holds which addresses: one JSON file, replaced
// atomically and durably on every change. ADD is two-phase: putPending before any kernel
// work, commit after it; a crash in between leaves a pending entry the next start cleans up.
// A file that cannot be read or parsed is an error and is left where it is: starting empty
// would hand out addresses that pods still use.
import { z } from 'zod';
import { errorCode, nodeFileSystem, writeFileAtomic, type FileSystem } from '@flock/exec';
import { steadyNow } from '@flock/ipam';
import {
  AllocationEntry,
  MAX_RELEASED,
  ReleasedAddress,
  STORE_FORMAT_VERSION,
  StoreFile,
  entryKey,
  type NewAllocationEntry,
} from './schema.js';
import { hostPortClash } from './host-ports.js';

type StoreErrorCode =
  | 'Unreadable'
  | 'Corrupt'
  | 'NewerVersion'
  | 'NotLoaded'
  | 'Invalid'
  | 'Exists'
  | 'Conflict'
  | 'NotFound'
  | 'WriteFailed';

/** The store as this run found it at start: the generation to roll back to. */
export const previousGeneration = (path: string) => `${path}.previous`;

export class AllocationStoreError extends Error {
  constructor(
    readonly code: StoreErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'AllocationStoreError';
  }
}

interface AllocationStoreOptions {
  /** Clock for createdAt, epoch milliseconds. */
  now?: () => number;
  fileSystem?: FileSystem;
  /**
   * The longest quarantine this agent gives (--address-quarantine): a restored one ends no
   * later than this from the load (default 5 minutes).
   */
  maxQuarantineMs?: number;
}

const DEFAULT_MAX_QUARANTINE_MS = 5 * 60_000;

type Compute<T> = (current: ReadonlyMap<string, AllocationEntry>) => {
  next?: Map<string, AllocationEntry>;
  /** Addresses to keep in quarantine from now on (written with `next`). */
  released?: ReleasedAddress[];
  result: T;
};

interface Waiting {
  compute: Compute<unknown>;
  resolve: (result: unknown) => void;
  reject: (error: unknown) => void;
}

export class AllocationStore {
  private state: ReadonlyMap<string, AllocationEntry> | undefined;
  /** Released addresses still (or, until the next write prunes them, lately) in quarantine. */
  private releasedList: readonly ReleasedAddress[] = [];
  private queue: Promise<unknown> = Promise.resolve();
  /** Changes waiting for the next write (see change()). */
  private batch: Waiting[] | undefined;
  private readonly now: () => number;
  private readonly fs: FileSystem;
  private readonly maxQuarantineMs: number;
  /** Why the last load() could not keep the previous generation (undefined: it did). */
  previousGenerationError: string | undefined;

  constructor(
    readonly path: string,
    options: AllocationStoreOptions = {},
  ) {
    this.now = options.now ?? steadyNow;
    this.fs = options.fileSystem ?? nodeFileSystem;
    this.maxQuarantineMs = options.maxQuarantineMs ?? DEFAULT_MAX_QUARANTINE_MS;
  }

  /** Read the file (a missing file is an empty store). Rejects when it is unreadable or corrupt. */
  load(): Promise<void> {
    return this.serialized(async () => {
      let text: string;
      try {
        text = await this.fs.readFile(this.path);
      } catch (error) {
        if (errorCode(error) === 'ENOENT') {
          this.state = new Map();
          this.releasedList = [];
          return;
        }
        throw new AllocationStoreError(
          'Unreadable',
          `cannot read the allocation store ${this.path}: ${describe(error)}; the file was left as it is`,
          { cause: error },
        );
      }
      const file = parseStoreFile(this.path, text);
      // Kept before this run writes anything: what to go back to if a later write (or a later
      // version of flock) leaves a file that cannot be read. Best effort: a full disk must not
      // keep the agent from starting with the store it could read.
      this.previousGenerationError = undefined;
      await writeFileAtomic(previousGeneration(this.path), text, { fs: this.fs }).catch(
        (error: unknown) => {
          this.previousGenerationError = `cannot keep the previous generation ${previousGeneration(this.path)}: ${describe(error)}`;
        },
      );
      // Written under a clock that ran ahead (a node that booted with a wrong time): no entry
      // is younger than this load and no quarantine outlasts one from now, or the sweep would
      // wait for that date and the addresses stay out of use until then.
      const now = this.now();
      const nowIso = new Date(now).toISOString();
      const latestUntil = new Date(now + this.maxQuarantineMs).toISOString();
      this.state = new Map(
        file.entries.map((e) => [
          entryKey(e.containerID, e.ifname),
          Date.parse(e.createdAt) > now ? { ...e, createdAt: nowIso } : e,
        ]),
      );
      this.releasedList = file.released.map((r) =>
        Date.parse(r.until) > now + this.maxQuarantineMs ? { ...r, until: latestUntil } : r,
      );
    });
  }

  /** Every entry, in the order they were added. */
  /** Has load() succeeded (entries() and get() throw NotLoaded before)? */
  get isLoaded(): boolean {
    return this.state !== undefined;
  }

  entries(): AllocationEntry[] {
    return [...this.loaded().values()].map(copyEntry);
  }

  /** Released addresses whose quarantine has not ended yet. */
  released(): ReleasedAddress[] {
    this.loaded();
    const now = this.now();
    return this.releasedList.filter((r) => Date.parse(r.until) > now).map((r) => ({ ...r }));
  }

  get(containerID: string, ifname: string): AllocationEntry | undefined {
    const entry = this.loaded().get(entryKey(containerID, ifname));
    return entry && copyEntry(entry);
  }

  /** Record a new allocation as pending (before any kernel work). */
  putPending(entry: NewAllocationEntry): Promise<AllocationEntry> {
    return this.change((current) => {
      const parsed = AllocationEntry.safeParse({
        ...entry,
        state: 'pending',
        createdAt: new Date(this.now()).toISOString(),
      });
      if (!parsed.success) {
        throw new AllocationStoreError(
          'Invalid',
          `invalid allocation entry: ${z.prettifyError(parsed.error)}`,
        );
      }
      const key = entryKey(parsed.data.containerID, parsed.data.ifname);
      if (current.has(key)) {
        throw new AllocationStoreError(
          'Exists',
          `container ${entry.containerID} interface ${entry.ifname} already has an allocation entry`,
        );
      }
      // Checked here, in the store's one queue: two ADDs at once cannot both take a hostPort.
      const clash = hostPortClash(parsed.data, current.values());
      if (clash) throw new AllocationStoreError('Conflict', clash);
      return { next: new Map([...current, [key, parsed.data]]), result: copyEntry(parsed.data) };
    });
  }

  /** Mark an entry committed (kernel work done). Committing a committed entry changes nothing. */
  commit(containerID: string, ifname: string): Promise<AllocationEntry> {
    return this.change((current) => {
      const key = entryKey(containerID, ifname);
      const entry = current.get(key);
      if (!entry) {
        throw new AllocationStoreError(
          'NotFound',
          `no allocation entry for container ${containerID} interface ${ifname}`,
        );
      }
      if (entry.state === 'committed') return { result: copyEntry(entry) };
      const committed: AllocationEntry = { ...entry, state: 'committed' };
      return { next: new Map([...current, [key, committed]]), result: copyEntry(committed) };
    });
  }

  /**
   * Mark a committed entry pending again before its kernel state is torn down (DEL is
   * two-phase too): a crash mid-teardown leaves an entry the next start drops, never a
   * committed entry without its kernel state. `released`: the addresses' quarantine, written
   * in the same write, so that neither a crash in the teardown nor a restart after it hands
   * them out early. Resolves undefined when there is no entry.
   */
  markPending(
    containerID: string,
    ifname: string,
    released: readonly ReleasedAddress[] = [],
  ): Promise<AllocationEntry | undefined> {
    return this.change((current) => {
      const key = entryKey(containerID, ifname);
      const entry = current.get(key);
      if (!entry || entry.state === 'pending') return { result: entry && copyEntry(entry) };
      const parsed = z.array(ReleasedAddress).safeParse(released);
      if (!parsed.success) {
        throw new AllocationStoreError(
          'Invalid',
          `invalid released address: ${z.prettifyError(parsed.error)}`,
        );
      }
      const pending: AllocationEntry = { ...entry, state: 'pending', removing: true };
      return {
        next: new Map([...current, [key, pending]]),
        released: parsed.data,
        result: copyEntry(pending),
      };
    });
  }

  /** Remove an entry; resolves false when there was none (DEL is idempotent). */
  remove(containerID: string, ifname: string): Promise<boolean> {
    return this.change((current) => {
      const key = entryKey(containerID, ifname);
      if (!current.has(key)) return { result: false };
      const next = new Map(current);
      next.delete(key);
      return { next, result: true };
    });
  }

  private loaded(): ReadonlyMap<string, AllocationEntry> {
    if (!this.state)
      throw new AllocationStoreError(
        'NotLoaded',
        `the allocation store ${this.path} has not been loaded`,
      );
    return this.state;
  }

  /**
   * Apply a change: compute the next state, write it, and only then make it the current
   * state. A failed write leaves both the file and the in-memory state as they were. Changes
   * asked for while a write is in progress go out together in the next write (one fsync for
   * many concurrent ADDs); each still resolves only once a write that holds it is durable.
   */
  private change<T>(compute: Compute<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const first = !this.batch;
      this.batch ??= [];
      this.batch.push({ compute, resolve, reject } as Waiting);
      if (first) void this.serialized(() => this.writeBatch());
    });
  }

  /** Compute the batch's changes in call order, write the result once, answer each caller. */
  private async writeBatch(): Promise<void> {
    const batch = this.batch ?? [];
    this.batch = undefined; // changes from now on wait for the next write
    let current: ReadonlyMap<string, AllocationEntry>;
    try {
      current = this.loaded();
    } catch (error) {
      for (const w of batch) w.reject(error);
      return;
    }
    const start = current;
    const released: ReleasedAddress[] = [];
    const done: { w: Waiting; result: unknown; afterChange: boolean }[] = [];
    for (const w of batch) {
      try {
        const change = w.compute(current);
        // A result computed on another caller's unwritten change depends on that write.
        done.push({ w, result: change.result, afterChange: current !== start || !!change.next });
        if (change.next) current = change.next;
        if (change.released) released.push(...change.released);
      } catch (error) {
        w.reject(error);
      }
    }
    if (current !== start) {
      const releasedNext = this.pruneReleased([...this.releasedList, ...released]);
      const file: StoreFile = {
        version: STORE_FORMAT_VERSION,
        entries: [...current.values()],
        released: releasedNext,
      };
      try {
        await writeFileAtomic(this.path, `${JSON.stringify(file, null, 2)}\n`, { fs: this.fs });
      } catch (error) {
        const failed = new AllocationStoreError(
          'WriteFailed',
          `cannot write the allocation store ${this.path}: ${describe(error)}; the previous state is kept`,
          { cause: error },
        );
        for (const d of done) {
          if (d.afterChange) d.w.reject(failed);
          else d.w.resolve(d.result);
        }
        return;
      }
      this.state = current;
      this.releasedList = releasedNext;
    }
    for (const d of done) d.w.resolve(d.result);
  }

  /** Drop what has expired; over the bound, forget the ones that expire first. */
  private pruneReleased(list: ReleasedAddress[]): ReleasedAddress[] {
    const now = this.now();
    const live = list.filter((r) => Date.parse(r.until) > now);
    if (live.length <= MAX_RELEASED) return live;
    return live.sort((a, b) => Date.parse(a.until) - Date.parse(b.until)).slice(-MAX_RELEASED);
  }

  /** Run one operation at a time, in call order, whatever the previous one's outcome. */
  private serialized<T>(operation: () => Promise<T>): Promise<T> {
    const run = this.queue.then(operation, operation);
    this.queue = run.catch(() => undefined);
    return run;
  }
}

/** Parse the store file's text; throws a Corrupt error that says what is wrong. */
export function parseStoreFile(path: string, text: string): StoreFile {
  const previous = previousGeneration(path);
  const corrupt = (detail: string, cause?: unknown) =>
    new AllocationStoreError(
      'Corrupt',
      `the allocation store ${path} is corrupt (${detail}); it was left in place: repair it, or replace it with ${previous} (the state the last run started from), or move it aside to start with an empty store`,
      { cause },
    );
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw corrupt(`not JSON: ${describe(error)}`, error);
  }
  const version = (json as { version?: unknown } | null)?.version;
  if (typeof version === 'number' && version > STORE_FORMAT_VERSION) {
    throw new AllocationStoreError(
      'NewerVersion',
      `the allocation store ${path} was written by a newer flock agent (format version ${version}; this version reads version ${STORE_FORMAT_VERSION}); it was left in place: run the newer agent again, or, to roll back, replace it with ${previous} if the newer agent left one of version ${STORE_FORMAT_VERSION}`,
    );
  }
  if (typeof version === 'number' && version !== STORE_FORMAT_VERSION) {
    throw corrupt(
      `format version ${version}, this version of flock reads version ${STORE_FORMAT_VERSION}`,
    );
  }
  const parsed = StoreFile.safeParse(json);
  if (!parsed.success) throw corrupt(z.prettifyError(parsed.error), parsed.error);
  return parsed.data;
}

function copyEntry(entry: AllocationEntry): AllocationEntry {
  return {
    ...entry,
    anycast: [...entry.anycast],
    ...(entry.communities ? { communities: [...entry.communities] } : {}),
  };
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
