// Hands the node's BIRD model to BIRD and keeps at it until BIRD has it: one Loop whose sync()
// renders the latest model and reloads BIRD with it through @flock/bird's applyBirdConfig, which
// writes bird.conf (atomically, 0600) before every reload, so the file on disk is always the
// latest model and a BIRD that starts later reads it. The Loop is the only scheduler: it
// debounces announcements and retries. Bytes equal to the config BIRD last accepted are not
// reloaded. When the reload finds BIRD not up ("unreachable": its socket is absent or refuses
// connections) the loop asks BIRD's socket every 250 ms, however long BIRD has been away, and
// reloads as soon as BIRD answers — within a second of BIRD accepting connections (the
// 2026-08-16 outage began with a first reload that raced BIRD's start and was never retried; a
// backoff grown to 10 s still left BIRD without the model for seconds). A reload that fails
// otherwise fails the run, and the Loop retries it with the latest model, backing off from 1 s
// to 10 s with jitter. The config directory must exist (shared with BIRD); the announcer does
// not create it. A config BIRD refuses, or a model that fails validation, is reported and not
// retried: the next change tries again.
import { stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Logger } from '@flock/api';
import {
  BirdUnavailableError,
  applyBirdConfig,
  renderBirdConfig,
  type BirdControl,
  type BirdModel,
  type ReloadOutcome,
} from '@flock/bird';
import { Loop, type Clock, type Random } from '@flock/kube';

export type AnnouncerState =
  /** Nothing handed to BIRD yet. */
  | { status: 'idle' }
  /** BIRD runs the latest model. */
  | { status: 'applied' }
  /** Waiting for BIRD to come up or answer; retrying. */
  | { status: 'unreachable' | 'failed'; message: string; since: number }
  /** BIRD refused the config, or the model is invalid: not retried. */
  | { status: 'refused' | 'invalid'; message: string };

/** A reload's outcome, or none needed: BIRD already runs these bytes. */
type SyncOutcome = ReloadOutcome | { status: 'unchanged' };

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
  /**
   * Model → file; throws for an invalid model (default: the BGP BIRD's bird.conf; the BFD
   * speaker has its own).
   */
  render?: (model: BirdModel) => string;
  /** Called each time BIRD runs `model` (reloaded with it, or it was already running). */
  onApplied?: (model: BirdModel) => void;
}

export class BirdAnnouncer {
  private readonly loop: Loop;
  private latest: BirdModel | undefined;
  private latestKey: string | undefined;
  /** BIRD was not up at the last reload: ask its socket before reloading again. */
  private waiting = false;
  private closed = false;
  private current: AnnouncerState = { status: 'idle' };
  /** The config BIRD last accepted, while the file still holds it. */
  private accepted: string | undefined;

  constructor(private readonly options: BirdAnnouncerOptions) {
    this.loop = new Loop({
      name: 'bird-announcer',
      sync: () => this.sync(),
      debounceMs: options.debounceMs ?? 200,
      backoff: {
        baseMs: options.retryMinMs ?? 1000,
        maxMs: options.retryMaxMs ?? 10_000,
        jitter: 0.2,
      },
      ...(options.clock ? { clock: options.clock } : {}),
      ...(options.random ? { random: options.random } : {}),
    });
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
    if (key === this.latestKey) return; // the loop, if retrying, carries it
    this.latest = model;
    this.latestKey = key;
    this.waiting = false; // a new model is reloaded, not just probed for
    this.loop.trigger();
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.loop.stop();
  }

  private async sync(): Promise<void> {
    const model = this.latest;
    const key = this.latestKey;
    if (!model || this.closed) return;
    if (this.waiting && !(await this.birdAnswers())) {
      this.loop.trigger(this.options.unreachableRetryMs ?? 250);
      return;
    }
    this.waiting = false;
    const problem = await this.directoryProblem();
    let outcome: SyncOutcome;
    if (problem) outcome = { status: 'failed', error: new Error(problem) };
    else {
      let text: string;
      try {
        text = (this.options.render ?? renderBirdConfig)(model);
      } catch (error) {
        if (key !== this.latestKey) return;
        const message = error instanceof Error ? error.message : String(error);
        this.options.logger.error('the BIRD model is invalid; nothing new announced', {
          error: message,
        });
        return this.setState({ status: 'invalid', message });
      }
      outcome = text === this.accepted ? { status: 'unchanged' } : await this.reload(text);
    }
    // A newer model came meanwhile: the follow-up run reloads it and reports.
    if (key !== this.latestKey || this.closed) return;
    this.settle(model, outcome);
  }

  private async reload(text: string): Promise<ReloadOutcome> {
    const outcome = await applyBirdConfig({
      configPath: this.options.configPath,
      text,
      control: this.options.control,
      logger: this.options.logger,
      ...(this.accepted === undefined ? {} : { restore: this.accepted }),
    });
    if (outcome.status === 'applied') this.accepted = text;
    // Unknown whether BIRD took it (failed), or the file holds the new one that a BIRD starting
    // now reads (unreachable): the next model reloads, even the one BIRD accepted last. A
    // refused one was put back to the accepted config.
    else if (outcome.status !== 'refused') this.accepted = undefined;
    return outcome;
  }

  /**
   * BIRD is not up: a cheap `show protocols` (no file written). Any answer, even an error,
   * means it is up: the reload then says what is wrong.
   */
  private async birdAnswers(): Promise<boolean> {
    try {
      await this.options.control.showProtocols();
      return true;
    } catch (error) {
      return !(error instanceof BirdUnavailableError);
    }
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

  private settle(model: BirdModel, outcome: SyncOutcome): void {
    switch (outcome.status) {
      case 'applied':
      case 'unchanged':
        this.setState({ status: 'applied' });
        this.options.onApplied?.(model);
        return;
      case 'refused':
        this.setState({ status: 'refused', message: outcome.error.message });
        return;
      case 'unreachable':
      case 'failed': {
        const since = this.current.status === outcome.status ? this.current.since : Date.now();
        this.setState({ status: outcome.status, message: outcome.error.message, since });
        if (outcome.status === 'failed') throw outcome.error; // the Loop retries after its backoff
        this.waiting = true;
        this.loop.trigger(this.options.unreachableRetryMs ?? 250);
        return;
      }
    }
  }

  private setState(next: AnnouncerState): void {
    const changed = JSON.stringify(next) !== JSON.stringify(this.current);
    this.current = next;
    if (changed) this.options.onState?.(next);
  }
}
