// The narrow edge between the datapath's logic and a kernel: read part of a namespace, apply
// a list of changes. Two implementations: IprouteKernel (the real one, iproute2) and
// MemoryKernel (in memory, for unit tests); the contract tests hold them to the same results.
import type { Action, NsRef, NsState, ReadQuery } from './model.js';
import type { DatapathStep, SysctlResult } from './types.js';

/** A change that failed; the changes before it in the same apply() took effect. */
export class ApplyError extends Error {
  constructor(
    readonly step: DatapathStep,
    /** Index of the failing action in the list given to apply(); -1 when unknown. */
    readonly index: number,
    /** The object already exists (EEXIST): how "create the veth" tells "it is there". */
    readonly exists: boolean,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ApplyError';
  }
}

/** The pod's namespace path does not exist (the pod is gone). */
export class NetnsMissingError extends Error {
  constructor(readonly netns: string) {
    super(`network namespace ${netns} does not exist`);
    this.name = 'NetnsMissingError';
  }
}

export interface Kernel {
  /** Read what the query asks for. Throws NetnsMissingError for a pod namespace that is gone. */
  read(ns: NsRef, query: ReadQuery): Promise<NsState>;
  /** Apply changes in order, stopping at the first failure (ApplyError). No-op when empty. */
  apply(ns: NsRef, actions: Action[]): Promise<void>;
  /** Apply changes in order, carrying on past failures, which are returned. */
  applyAll(ns: NsRef, actions: Action[]): Promise<ApplyError[]>;
  /** True when the namespace path exists (always true for the host). */
  netnsExists(ns: NsRef): Promise<boolean>;
  /**
   * Give sysctls of the host namespace these values, each independently (best effort): each is
   * read first and written only when it differs, so a read-only /proc/sys whose values are
   * already right (the chart's init container set them) is no failure.
   */
  writeHostSysctls(values: Record<string, string>): Promise<SysctlResult[]>;
}
