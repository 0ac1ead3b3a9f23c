// The agent's parts share one lifetime shape: agent.ts constructs every part first (no I/O, no
// part reaches one that does not exist yet), then starts them in order and stops them in
// reverse. A start that fails stops what had started, so a failed start-up leaves nothing
// running.

/** A part of the agent with a lifetime. start() may wait (for a NodeConfig, a cache). */
export interface Component {
  readonly name: string;
  start(): Promise<void> | void;
  stop?(): Promise<void> | void;
}

/** A component that runs `start` once at its place in the start-up and has nothing to stop. */
export function step(name: string, start: () => Promise<void> | void): Component {
  return { name, start };
}

/** A server opened at start-up and closed at stop (health, the CNI and status sockets). */
export function serving(name: string, open: () => Promise<{ close(): Promise<void> | void }>) {
  let server: { close(): Promise<void> | void } | undefined;
  return {
    name,
    start: async () => {
      server = await open();
    },
    stop: () => server?.close(),
  } satisfies Component;
}

/**
 * Start `components` in order (`onStart` is told each name first). Resolves to the function
 * that stops the started ones in reverse; when a start fails, stops those and rejects.
 */
export async function startInOrder(
  components: readonly Component[],
  onStart: (name: string) => void,
): Promise<() => Promise<void>> {
  const started: Component[] = [];
  const stop = async () => {
    for (const c of started.splice(0).reverse()) await c.stop?.();
  };
  try {
    for (const c of components) {
      onStart(c.name);
      started.push(c);
      await c.start();
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return stop;
}

/** A loop run's end, whatever its outcome (failures are logged by the loop's onError). */
export const settled = (run: Promise<unknown>): Promise<void> =>
  run.then(
    () => undefined,
    () => undefined,
  );

/** What a cache component drives: a Cache of @flock/kube. */
interface Startable {
  start(): void;
  stop(): Promise<void>;
  waitForSync(timeoutMs: number): Promise<void>;
}

/**
 * Caches started together at one place in the start-up, which waits for them to sync at most
 * `waitMs`: what reads them begins whenever they sync (a cache that cannot must not hold back
 * the rest of the agent).
 */
export function caches(name: string, list: readonly Startable[], waitMs: number): Component {
  return {
    name,
    start: async () => {
      for (const c of list) c.start();
      await Promise.all(list.map((c) => c.waitForSync(waitMs))).catch(() => {});
    },
    stop: async () => {
      await Promise.all(list.map((c) => c.stop()));
    },
  };
}
