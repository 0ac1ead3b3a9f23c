// A failure of a CNI command, carrying the CNI error code the plugin prints.
import { CniErrorCode, type AgentResponse } from '@flock/api';

export class CniCommandError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly details?: string,
  ) {
    super(message);
    this.name = 'CniCommandError';
  }

  toResponse(): AgentResponse {
    return {
      ok: false,
      error: {
        code: this.code,
        msg: this.message,
        ...(this.details ? { details: this.details } : {}),
      },
    };
  }
}

/** Any thrown value as an agent response; unknown errors are I/O failures with the message. */
export function errorResponse(error: unknown): AgentResponse {
  if (error instanceof CniCommandError) return error.toResponse();
  const message = error instanceof Error ? error.message : String(error);
  return { ok: false, error: { code: CniErrorCode.IoFailure, msg: message } };
}
