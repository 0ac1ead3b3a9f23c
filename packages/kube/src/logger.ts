// Logging: the small interface every part of the runtime accepts, and the winston logger the
// apps create (JSON lines with timestamp and component; warnings and errors on stderr).
import winston from 'winston';

/** What the runtime needs from a logger; a winston logger satisfies it. */
export interface Logger {
  error(message: string, meta?: Record<string, unknown>): void;
  warn(message: string, meta?: Record<string, unknown>): void;
  info(message: string, meta?: Record<string, unknown>): void;
  debug(message: string, meta?: Record<string, unknown>): void;
}

export type LogLevel = 'error' | 'warn' | 'info' | 'debug';
export const LOG_LEVELS: readonly LogLevel[] = ['error', 'warn', 'info', 'debug'];

/** A winston logger writing one JSON object per line: {level, message, component, timestamp, ...}. */
export function createLogger(component: string, level: LogLevel = 'info'): winston.Logger {
  if (!LOG_LEVELS.includes(level)) {
    throw new Error(`log level must be one of ${LOG_LEVELS.join(', ')}, got ${String(level)}`);
  }
  return winston.createLogger({
    level,
    defaultMeta: { component },
    format: winston.format.combine(
      winston.format.errors({ stack: true }),
      winston.format.timestamp(),
      winston.format.json(),
    ),
    transports: [new winston.transports.Console({ stderrLevels: ['error', 'warn'] })],
  });
}

/** A logger that drops everything (for benchmarks; tests should capture logs and assert on them). */
export const silentLogger: Logger = {
  error: () => {},
  warn: () => {},
  info: () => {},
  debug: () => {},
};
