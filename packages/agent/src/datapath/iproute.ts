// IprouteDatapath: the datapath on the real kernel through iproute2 (see iproute-kernel.ts).
import type { DatapathFaultPoint, FaultHook } from '../core/faults.js';
import { FlockDatapath, type DatapathLogger } from './datapath.js';
import { FaultKernel } from './fault-kernel.js';
import { IprouteKernel, type IprouteKernelOptions } from './iproute-kernel.js';

interface IprouteDatapathOptions extends IprouteKernelOptions {
  logger?: DatapathLogger;
  /** Test-only (--test-faults): apply step by step and call this after each step. */
  fault?: FaultHook<DatapathFaultPoint>;
}

export class IprouteDatapath extends FlockDatapath {
  constructor(options: IprouteDatapathOptions = {}) {
    const { logger, fault, ...kernel } = options;
    const real = new IprouteKernel(kernel);
    super(fault ? new FaultKernel(real, fault) : real, logger);
  }
}
