// The logging interface libraries accept. winston's Logger satisfies it; tests pass a recorder.
export interface Logger {
  debug(message: string, meta?: Record<string, unknown>): void;
  info(message: string, meta?: Record<string, unknown>): void;
  warn(message: string, meta?: Record<string, unknown>): void;
  error(message: string, meta?: Record<string, unknown>): void;
}

/** A logger that drops everything (the default where a caller gives none). */
export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };
