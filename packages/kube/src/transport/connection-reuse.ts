// One connection pool (a keep-alive node:http(s) Agent) shared by every request of a
// transport, instead of a TLS handshake per request: with 5,000 NodeConfigs to write that costs
// the operator and the API server more CPU than the work itself. The pool is replaced every
// `maxAgeMs` so rotated client certificates and CAs are picked up (they are read when a pool
// is built), and at once when the client identity changes (an exec plugin handed out a new
// certificate). Bearer tokens travel in headers, which are still set per request.
import type { Agent } from 'node:http';

/**
 * A replaced pool is closed this much later, not at once: a request that picked it up just
 * before the replacement has not dispatched yet. Its open streams end with their own timeouts
 * or aborts meanwhile; closing is graceful (see closePool).
 */
export const RETIRED_POOL_GRACE_MS = 60_000;

/**
 * Close a pool gracefully: idle connections now, busy ones as soon as their request ends (an
 * agent keeps no free sockets at maxFreeSockets 0). A request that still picks it up opens a
 * connection of its own, used once.
 */
export function closePool(agent: Agent): void {
  agent.maxFreeSockets = 0;
  for (const sockets of Object.values(agent.freeSockets)) {
    for (const socket of sockets ?? []) socket.destroy();
  }
}

interface SharedPoolOptions<T> {
  close: (pool: T) => void;
  maxAgeMs?: number;
  now?: () => number;
  graceMs?: number;
}

export class SharedPool<T> {
  private shared: { pool: T; identity: string; since: number } | undefined;
  private readonly close: (pool: T) => void;
  private readonly maxAgeMs: number;
  private readonly now: () => number;
  private readonly graceMs: number;

  constructor(options: SharedPoolOptions<T>) {
    this.close = options.close;
    this.maxAgeMs = options.maxAgeMs ?? 5 * 60_000;
    this.now = options.now ?? Date.now;
    this.graceMs = options.graceMs ?? RETIRED_POOL_GRACE_MS;
  }

  /** The current pool for this client identity; `create` builds a new one when needed. */
  get(identity: string, create: () => T): T {
    const s = this.shared;
    if (s && s.identity === identity && this.now() - s.since < this.maxAgeMs) return s.pool;
    this.retire();
    const pool = create();
    this.shared = { pool, identity, since: this.now() };
    return pool;
  }

  /**
   * The pool may sit on a dead connection (a peer that vanished without a FIN or RST): every
   * request would queue on it until the kernel gives up, minutes later. Retire it: the next
   * request builds a new pool, the old one closes after the grace period.
   */
  retire(): void {
    const old = this.shared;
    this.shared = undefined;
    if (!old) return;
    setTimeout(() => this.close(old.pool), this.graceMs).unref();
  }
}
