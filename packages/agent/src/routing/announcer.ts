// Hands the node's BIRD model to @flock/bird's BirdConfigManager and keeps at it until BIRD has
// it. The manager writes bird.conf (atomically, 0600) before every reload, so the file on disk
// is always the latest model and a BIRD that starts later reads it. When the reload finds BIRD
// not up ("unreachable": its socket is absent or refuses connections) the announcer asks BIRD's
// socket every 250 ms, however long BIRD has been away, and reloads as soon as BIRD answers —
// within a second of BIRD accepting connections (the 2026-08-16 outage began with a first
// reload that raced BIRD's start and was never retried; a backoff grown to 10 s still left
// BIRD without the model for seconds). A reload that fails otherwise is retried with the
// latest model, backing off from 1 s to 10 s with jitter. The config directory must exist
// (shared with BIRD); the announcer does not create it. A config BIRD refuses, or a model that
// fails validation, is reported and not retried: the next change tries again.
import { stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from '@flock/api';
import {
  BirdConfigManager,
  BirdUnavailableError,
  type BirdControl,
  type BirdModel,
  type ReloadOutcome,
} from '@flock/bird';
import { Backoff, systemClock, type Clock, type Random, type TimerHandle } from '@flock/kube';

export type AnnouncerState =
  /** Nothing handed to BIRD yet. */
  | { status: 'idle' }
  /** BIRD runs the latest model. */
  | { status: 'applied' }
  /** Waiting for BIRD to come up or answer; retrying. */
  | { status: 'unreachable' | 'failed'; message: string; since: number }
  /** BIRD refused the config, or the model is invalid: not retried. */
  | { status: 'refused' | 'invalid'; message: string };

interface BirdAnnouncerOptions {
  configPath: string;
  control: BirdControl;
  logger: Logger;
  debounceMs?: number;
  /** Backoff of reloads that failed otherwise (default 1 s → 10 s, 20 % jitter). */
  retryMinMs?: number;
  retryMaxMs?: number;
  /** How often BIRD's socket is asked while BIRD is not up (default 250 ms). */
  unreachableRetryMs?: number;
  /** Timers (tests drive them); default the process clock. */
  clock?: Clock;
  /** The backoff's jitter source (default Math.random). */
  random?: Random;
  /** Called after each state change. */
  onState?: (state: AnnouncerState) => void;
  /** Model → file (default: the BGP BIRD's bird.conf; the BFD speaker has its own). */
  render?: (model: BirdModel) => string;
  /** Called each time BIRD runs `model` (reloaded with it, or it was already running). */
  onApplied?: (model: BirdModel) => void;
}

export class BirdAnnouncer {
  private readonly manager: BirdConfigManager;
  private latest: BirdModel | undefined;
  private latestKey: string | undefined;
  private generation = 0;
  private retryTimer: TimerHandle | undefined;
  private readonly backoff: Backoff;
  private readonly clock: Clock;
  private closed = false;
  private current: AnnouncerState = { status: 'idle' };

  constructor(private readonly options: BirdAnnouncerOptions) {
    this.manager = new BirdConfigManager({
      configPath: options.configPath,
      control: options.control,
      logger: options.logger,
      debounceMs: options.debounceMs ?? 200,
      ...(options.render ? { render: options.render } : {}),
    });
    this.clock = options.clock ?? systemClock;
    this.backoff = new Backoff(
      { baseMs: options.retryMinMs ?? 1000, maxMs: options.retryMaxMs ?? 10_000, jitter: 0.2 },
      options.random,
    );
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
    this.backoff.reset();
    this.send();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.clock.clearTimeout(this.retryTimer);
    await this.manager.close();
  }

  private send(): void {
    const model = this.latest;
    if (!model || this.closed) return;
    this.clock.clearTimeout(this.retryTimer);
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
        this.backoff.reset();
        this.setState({ status: 'applied' });
        if (this.latest) this.options.onApplied?.(this.latest);
        return;
      case 'refused':
        this.setState({ status: 'refused', message: outcome.error.message });
        return;
      case 'unreachable':
      case 'failed': {
        const since = this.current.status === outcome.status ? this.current.since : Date.now();
        this.setState({ status: outcome.status, message: outcome.error.message, since });
        if (outcome.status === 'unreachable') this.waitForBird(generation);
        else this.retryTimer = this.clock.setTimeout(() => this.send(), this.backoff.next());
        return;
      }
      case 'cancelled':
        return;
    }
  }

  /**
   * BIRD is not up: ask its socket (a cheap `show protocols`, no file written) every
   * unreachableRetryMs until it answers, then reload with the latest model.
   */
  private waitForBird(generation: number): void {
    this.retryTimer = this.clock.setTimeout(() => {
      this.options.control.showProtocols().then(
        () => {
          if (generation === this.generation) this.send();
        },
        (error: unknown) => {
          if (generation !== this.generation || this.closed) return;
          if (error instanceof BirdUnavailableError) this.waitForBird(generation);
          else this.send(); // it answers, if not well: let the reload say what is wrong
        },
      );
    }, this.options.unreachableRetryMs ?? 250);
  }

  private setState(next: AnnouncerState): void {
    const changed = JSON.stringify(next) !== JSON.stringify(this.current);
    this.current = next;
    if (changed) this.options.onState?.(next);
  }
}
