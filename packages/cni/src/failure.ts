// A failure the plugin reports to the runtime as the CNI spec's error object.
import { CNI_VERSION } from '@flock/api';

/** A CNI error: spec code, short message, optional details (printed on stdout, exit 1). */
export class CniFailure extends Error {
  constructor(
    readonly code: number,
    readonly msg: string,
    readonly details?: string,
  ) {
    super(msg);
    this.name = 'CniFailure';
  }
}

/** The spec's error object, in the caller's version. */
export function errorObject(
  failure: { code: number; msg: string; details?: string | undefined },
  cniVersion: string = CNI_VERSION,
): { cniVersion: string; code: number; msg: string; details?: string } {
  return {
    cniVersion,
    code: failure.code,
    msg: failure.msg,
    ...(failure.details ? { details: failure.details } : {}),
  };
}
