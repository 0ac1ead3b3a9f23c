// Keeps bird.conf and the running BIRD in step with the latest model: render, skip when the
// bytes equal the last config BIRD accepted, debounce bursts into one reload, write the file
// atomically (0600), reload through the control socket. A refused config is taken back out of
// the file, so that a BIRD restart still starts from the last good one.
import { EventEmitter } from 'node:events';
import { rm } from 'node:fs/promises';
import { BirdUnavailableError, type BirdControl, type ConfigureResult } from './client.js';
import { readFileIfExists, writeFileAtomic } from '@flock/exec';
import { silentLogger, type Logger } from '@flock/api';
import { BirdModel } from './model.js';
import { BirdCommandError } from './reply.js';
import { renderBirdConfig } from './render.js';

/** The subset of a winston logger the manager uses. */

/** How one reload attempt ended. */
export type ReloadOutcome =
  /** Same bytes as the config BIRD last accepted: nothing written, no reload. */
  | { status: 'unchanged' }
  /** Written and accepted by BIRD. */
  | { status: 'applied'; result: ConfigureResult }
  /** BIRD refused it (BIRD's message and line in `error`); the file holds the previous config again. */
  | { status: 'refused'; error: BirdCommandError }
  /** BIRD is not up: the file is written, and BIRD reads it when it starts. */
  | { status: 'unreachable'; error: BirdUnavailableError }
  /** Anything else (write error, broken reply, timeout); the next update tries again. */
  | { status: 'failed'; error: Error }
  /** The manager was closed before this update was applied. */
  | { status: 'cancelled' };

interface BirdConfigManagerOptions {
  /** The file BIRD was started with (`bird -c`). */
  configPath: string;
  control: BirdControl;
  logger?: Logger;
  /** Collect updates for this long before reloading (default 500 ms). */
  debounceMs?: number;
  /** Run `configure check` before `configure` (default false: rendered configs are valid). */
  check?: boolean;
  /** Turns the model into the file content (default renderBirdConfig). */
  render?: (model: BirdModel) => string;
}

interface Pending {
  text: string;
  waiters: ((outcome: ReloadOutcome) => void)[];
}

export class BirdConfigManager extends EventEmitter<{ settled: [ReloadOutcome] }> {
  private readonly log: Logger;
  private readonly debounceMs: number;
  private readonly render: (model: BirdModel) => string;
  private applied: string | undefined;
  private pending: Pending | undefined;
  private timer: NodeJS.Timeout | undefined;
  private inFlight = 0;
  private chain: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(private readonly options: BirdConfigManagerOptions) {
    super();
    this.log = options.logger ?? silentLogger;
    this.debounceMs = options.debounceMs ?? 500;
    this.render = options.render ?? renderBirdConfig;
  }

  /** The config BIRD last accepted through this manager. */
  get appliedConfig(): string | undefined {
    return this.applied;
  }

  /**
   * Ask for `model` to be announced. Resolves with the outcome of the reload that carries it
   * (later updates in the same burst share that reload); rejects only for an invalid model.
   */
  update(model: BirdModel): Promise<ReloadOutcome> {
    let text: string;
    try {
      text = this.render(BirdModel.parse(model));
    } catch (e) {
      return Promise.reject(e instanceof Error ? e : new Error(String(e)));
    }
    if (this.closed) return Promise.resolve({ status: 'cancelled' });
    if (!this.pending && this.inFlight === 0 && text === this.applied) {
      return Promise.resolve({ status: 'unchanged' });
    }
    return new Promise((resolve) => {
      this.pending = { text, waiters: [...(this.pending?.waiters ?? []), resolve] };
      // The first update of a burst starts the clock; later ones only replace the content, so a
      // steady stream of updates still reloads every debounceMs.
      // flush() never rejects: apply() turns every failure into an outcome.
      this.timer ??= setTimeout(() => void this.flush(), this.debounceMs);
    });
  }

  /** Apply what is pending now instead of at the end of the debounce. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const job = this.pending;
    this.pending = undefined;
    if (!job) return this.chain;
    this.inFlight++;
    this.chain = this.chain
      .then(() => this.apply(job.text))
      .then((outcome) => {
        this.inFlight--;
        for (const resolve of job.waiters) resolve(outcome);
        this.emit('settled', outcome);
      });
    return this.chain;
  }

  /** Stop: pending updates resolve as cancelled; waits for a reload already running. */
  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    const job = this.pending;
    this.pending = undefined;
    for (const resolve of job?.waiters ?? []) resolve({ status: 'cancelled' });
    await this.chain;
  }

  private async apply(text: string): Promise<ReloadOutcome> {
    if (text === this.applied) return { status: 'unchanged' };
    const path = this.options.configPath;
    let previous: string | undefined;
    try {
      previous = await readFileIfExists(path);
      await writeFileAtomic(path, text);
    } catch (e) {
      this.log.error('cannot write the BIRD configuration', { path, error: String(e) });
      return { status: 'failed', error: e as Error };
    }
    try {
      const result = await this.options.control.configure({ check: this.options.check ?? false });
      this.applied = text;
      this.log.info('BIRD reconfigured', { path, code: result.code, reply: result.message });
      return { status: 'applied', result };
    } catch (e) {
      if (e instanceof BirdUnavailableError) {
        this.log.warn('BIRD is not up; it will read the new configuration when it starts', {
          path,
          error: e.message,
        });
        return { status: 'unreachable', error: e };
      }
      if (e instanceof BirdCommandError) {
        this.log.error('BIRD refused the new configuration; the previous one stays', {
          path,
          error: e.reply.text,
          ...(e.location ? { line: e.location.line, column: e.location.column } : {}),
        });
        await this.restore(this.applied ?? previous);
        return { status: 'refused', error: e };
      }
      // Unknown whether BIRD took it: forget what was applied so the next update reloads.
      this.applied = undefined;
      this.log.error('reloading BIRD failed', { path, error: String(e) });
      return { status: 'failed', error: e as Error };
    }
  }

  private async restore(content: string | undefined): Promise<void> {
    const path = this.options.configPath;
    try {
      if (content === undefined) await rm(path, { force: true });
      else await writeFileAtomic(path, content);
    } catch (e) {
      this.log.error('cannot restore the previous BIRD configuration', { path, error: String(e) });
    }
  }
}
