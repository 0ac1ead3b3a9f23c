// One reload of BIRD with a config, and nothing else: write bird.conf atomically (0600), tell
// BIRD to read it through the control socket, and take a refused config back out of the file so
// that a BIRD restart still starts from a good one. No memory and no timers: when to reload and
// what BIRD already runs are the caller's business (the agent's announcer).
import { rm } from 'node:fs/promises';
import { readFileIfExists, writeFileAtomic } from '@flock/exec';
import { silentLogger, type Logger } from '@flock/api';
import { BirdUnavailableError, type BirdControl, type ConfigureResult } from './client.js';
import { BirdCommandError } from './reply.js';

/** How one reload ended. */
export type ReloadOutcome =
  /** Written and accepted by BIRD. */
  | { status: 'applied'; result: ConfigureResult }
  /** BIRD refused it (BIRD's message and line in `error`); the file holds the previous config again. */
  | { status: 'refused'; error: BirdCommandError }
  /** BIRD is not up: the file is written, and BIRD reads it when it starts. */
  | { status: 'unreachable'; error: BirdUnavailableError }
  /** Anything else (write error, broken reply, timeout): unknown whether BIRD took it. */
  | { status: 'failed'; error: Error };

export interface ApplyBirdConfigOptions {
  /** The file BIRD was started with (`bird -c`). */
  configPath: string;
  /** The whole file, rendered (renderBirdConfig, renderBfdSpeakerConfig). */
  text: string;
  control: Pick<BirdControl, 'configure'>;
  logger?: Logger;
  /** Run `configure check` first (default false: rendered configs are valid). */
  check?: boolean;
  /**
   * What the file gets back when BIRD refuses `text`: the config BIRD last accepted, when the
   * caller knows it. Default: what the file held before this write (no file: it is removed).
   */
  restore?: string;
}

/** Write `text` to `configPath` and reload BIRD with it; never rejects. */
export async function applyBirdConfig(options: ApplyBirdConfigOptions): Promise<ReloadOutcome> {
  const { configPath: path, text, control, check = false } = options;
  const log = options.logger ?? silentLogger;
  let restore = options.restore;
  try {
    restore ??= await readFileIfExists(path);
    await writeFileAtomic(path, text);
  } catch (e) {
    log.error('cannot write the BIRD configuration', { path, error: String(e) });
    return { status: 'failed', error: asError(e) };
  }
  try {
    const result = await control.configure({ check });
    log.info('BIRD reconfigured', { path, code: result.code, reply: result.message });
    return { status: 'applied', result };
  } catch (e) {
    if (e instanceof BirdUnavailableError) {
      log.warn('BIRD is not up; it will read the new configuration when it starts', {
        path,
        error: e.message,
      });
      return { status: 'unreachable', error: e };
    }
    if (e instanceof BirdCommandError) {
      log.error('BIRD refused the new configuration; the previous one stays', {
        path,
        error: e.reply.text,
        ...(e.location ? { line: e.location.line, column: e.location.column } : {}),
      });
      await putBack(path, restore, log);
      return { status: 'refused', error: e };
    }
    log.error('reloading BIRD failed', { path, error: String(e) });
    return { status: 'failed', error: asError(e) };
  }
}

async function putBack(path: string, content: string | undefined, log: Logger): Promise<void> {
  try {
    if (content === undefined) await rm(path, { force: true });
    else await writeFileAtomic(path, content);
  } catch (e) {
    log.error('cannot restore the previous BIRD configuration', { path, error: String(e) });
  }
}

function asError(e: unknown): Error {
  return e instanceof Error ? e : new Error(String(e));
}
