// The announcement pass asks "does kube-proxy here hold this Service address?" for every address
// it would announce, and must not wait. An address kube-proxy holds stays held while its Service
// has it (kube-proxy rewrites its table in one transaction, never without a live address), so
// a yes is kept and only the addresses still waiting are read again: one read of kube-proxy's
// maps at a time (kube-proxy-rules.ts), at once for a new address, then again after retryMs,
// doubling up to maxRetryMs while nothing new is held (an address kube-proxy never takes, e.g.
// of a family the Service does not have, costs a read every few seconds, not a stream of them).
import type { Protocol } from '@flock/api';
import { rulesKey, type ReadKubeProxy } from './kube-proxy-rules.js';

export class KubeProxyAddresses {
  private readonly held = new Set<string>();
  /** Keys asked about and not held yet, with what to look them up by. */
  private readonly waiting = new Map<string, [string, Protocol, number]>();
  private reading: Promise<void> | undefined;
  private delayMs: number;
  /** No read before this (the backoff), unless a new address comes. */
  private nextReadAt = -Infinity;

  constructor(
    private readonly read: ReadKubeProxy,
    /** Some became held (0), or some still wait (the delay): re-plan after delayMs. */
    private readonly changed: (delayMs: number) => void,
    private readonly onError: (error: unknown) => void,
    private readonly retryMs = 200,
    private readonly maxRetryMs = 5_000,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.delayMs = retryMs;
  }

  /** Held already? If not, it is read in the background (at once when it is new). */
  has(address: string, protocol: Protocol, port: number): boolean {
    const key = rulesKey(address, protocol, port);
    if (this.held.has(key)) return true;
    if (!this.waiting.has(key)) {
      this.waiting.set(key, [address, protocol, port]);
      this.delayMs = this.retryMs;
      this.nextReadAt = -Infinity;
    }
    if (this.now() >= this.nextReadAt) void this.refresh();
    return false;
  }

  /** Read now for these and resolve once that read is done. */
  async ask(addresses: Iterable<readonly [string, Protocol, number]>): Promise<void> {
    for (const [address, protocol, port] of addresses) {
      const key = rulesKey(address, protocol, port);
      if (!this.held.has(key)) this.waiting.set(key, [address, protocol, port]);
    }
    await this.reading;
    await this.refresh();
  }

  /** Forget the keys (rulesKey) no Service has any more. */
  keep(keys: ReadonlySet<string>): void {
    for (const key of this.held) if (!keys.has(key)) this.held.delete(key);
    for (const key of this.waiting.keys()) if (!keys.has(key)) this.waiting.delete(key);
  }

  private refresh(): Promise<void> {
    if (this.reading || !this.waiting.size) return this.reading ?? Promise.resolve();
    this.reading = this.readOnce().finally(() => (this.reading = undefined));
    return this.reading;
  }

  private async readOnce(): Promise<void> {
    let newlyHeld = 0;
    try {
      const view = await this.read();
      for (const [key, [address, protocol, port]] of this.waiting)
        if (view.has(address, protocol, port)) {
          this.held.add(key);
          this.waiting.delete(key);
          newlyHeld++;
        }
    } catch (error) {
      this.onError(error); // the addresses keep waiting: read again after retryMs
    }
    if (newlyHeld) {
      this.delayMs = this.retryMs;
      this.nextReadAt = -Infinity;
      this.changed(0);
    } else if (this.waiting.size) {
      this.nextReadAt = this.now() + this.delayMs;
      this.changed(this.delayMs);
      this.delayMs = Math.min(this.delayMs * 2, this.maxRetryMs);
    }
  }
}
