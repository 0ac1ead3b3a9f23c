// Logging: the winston logger the apps create (JSON lines with timestamp and component;
// warnings and errors on stderr). The interface every part of the runtime accepts is
// @flock/api's Logger, re-exported here beside it.
import winston from 'winston';

export { silentLogger, type Logger } from '@flock/api';

export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

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
