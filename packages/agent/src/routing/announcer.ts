// Hands the node's BIRD model to @flock/bird's BirdConfigManager and keeps at it until BIRD has
// it. The manager writes bird.conf (atomically, 0600) before every reload, so the file on disk
// is always the latest model and a BIRD that starts later reads it; when the reload finds BIRD
// not up ("unreachable") or fails otherwise, the announcer tries again with the latest model,
// backing off from 1 s to 10 s, until BIRD takes it. The config directory must exist (shared
// with BIRD); the announcer does not create it. The 2026-08-16 outage began with a first
// reload that raced BIRD's start and was never retried. A config BIRD refuses, or a model that
// fails validation, is reported and not retried: the next change tries again.
import { stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from '@flock/api';
import {
  BirdConfigManager,
  type BirdControl,
  type BirdModel,
  type ReloadOutcome,
} from '@flock/bird';

export type AnnouncerState =
  /** Nothing handed to BIRD yet. */
  | { status: 'idle' }
  /** BIRD runs the latest model. */
  | { status: 'applied' }
  /** Waiting for BIRD to come up or answer; retrying. */
  | { status: 'unreachable' | 'failed'; message: string; since: number }
  /** BIRD refused the config, or the model is invalid: not retried. */
  | { status: 'refused' | 'invalid'; message: string };

export interface BirdAnnouncerOptions {
  configPath: string;
  control: BirdControl;
  logger: Logger;
  debounceMs?: number;
  retryMinMs?: number;
  retryMaxMs?: number;
  /** Called after each state change. */
  onState?: (state: AnnouncerState) => void;
}

export class BirdAnnouncer {
  private readonly manager: BirdConfigManager;
  private latest: BirdModel | undefined;
  private latestKey: string | undefined;
  private generation = 0;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryMs: number;
  private closed = false;
  private current: AnnouncerState = { status: 'idle' };

  constructor(private readonly options: BirdAnnouncerOptions) {
    this.manager = new BirdConfigManager({
      configPath: options.configPath,
      control: options.control,
      logger: options.logger,
      debounceMs: options.debounceMs ?? 200,
    });
    this.retryMs = options.retryMinMs ?? 1000;
  }

  get state(): AnnouncerState {
    return this.current;
  }

  /** The last model asked for. */
  get model(): BirdModel | undefined {
    return this.latest;
  }

  /** Announce `model` (the latest call wins). A model equal to the last one is a no-op. */
  announce(model: BirdModel): void {
    if (this.closed) return;
    const key = JSON.stringify(model);
    if (key === this.latestKey) return; // the retry loop, if any, carries it
    this.latest = model;
    this.latestKey = key;
    this.retryMs = this.options.retryMinMs ?? 1000;
    this.send();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retryTimer);
    await this.manager.close();
  }

  private send(): void {
    const model = this.latest;
    if (!model || this.closed) return;
    clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    const generation = ++this.generation;
    void this.directoryProblem().then((problem) => {
      if (generation !== this.generation || this.closed) return;
      if (problem) return this.settle(generation, { status: 'failed', error: new Error(problem) });
      this.manager.update(model).then(
        (outcome) => this.settle(generation, outcome),
        (error: unknown) => {
          if (generation !== this.generation) return;
          const message = error instanceof Error ? error.message : String(error);
          this.options.logger.error('the BIRD model is invalid; nothing new announced', {
            error: message,
          });
          this.setState({ status: 'invalid', message });
        },
      );
    });
  }

  /**
   * The config directory is shared with BIRD (a volume both containers mount): the agent does
   * not create it, since a file in a directory BIRD cannot see would announce nothing.
   */
  private async directoryProblem(): Promise<string | undefined> {
    const dir = dirname(this.options.configPath);
    try {
      if ((await stat(dir)).isDirectory()) return undefined;
      return `${dir} is not a directory`;
    } catch {
      return `the BIRD config directory ${dir} does not exist (it must be shared with BIRD)`;
    }
  }

  private settle(generation: number, outcome: ReloadOutcome): void {
    // Updates of one burst share a reload: only the newest caller acts on it.
    if (generation !== this.generation || this.closed) return;
    switch (outcome.status) {
      case 'applied':
      case 'unchanged':
        this.retryMs = this.options.retryMinMs ?? 1000;
        this.setState({ status: 'applied' });
        return;
      case 'refused':
        this.setState({ status: 'refused', message: outcome.error.message });
        return;
      case 'unreachable':
      case 'failed': {
        const since = this.current.status === outcome.status ? this.current.since : Date.now();
        this.setState({ status: outcome.status, message: outcome.error.message, since });
        this.retryTimer = setTimeout(() => this.send(), this.retryMs);
        this.retryMs = Math.min(this.retryMs * 2, this.options.retryMaxMs ?? 10_000);
        return;
      }
      case 'cancelled':
        return;
    }
  }

  private setState(next: AnnouncerState): void {
    const changed = JSON.stringify(next) !== JSON.stringify(this.current);
    this.current = next;
    if (changed) this.options.onState?.(next);
  }
}
