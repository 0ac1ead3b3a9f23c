// A Logger that keeps what it is told, so tests can assert that something was logged.
import type { Logger, LogLevel } from '../src/core/logger.js';

export interface LogEntry {
  level: LogLevel;
  message: string;
  meta: Record<string, unknown>;
}

export interface MemoryLogger extends Logger {
  readonly entries: LogEntry[];
  /** Entries at `level` whose message contains `text`. */
  find(level: LogLevel, text: string): LogEntry[];
}

export function createMemoryLogger(): MemoryLogger {
  const entries: LogEntry[] = [];
  const at =
    (level: LogLevel) =>
    (message: string, meta: Record<string, unknown> = {}) => {
      entries.push({ level, message, meta });
    };
  return {
    entries,
    error: at('error'),
    warn: at('warn'),
    info: at('info'),
    debug: at('debug'),
    find: (level, text) => entries.filter((e) => e.level === level && e.message.includes(text)),
  };
}
