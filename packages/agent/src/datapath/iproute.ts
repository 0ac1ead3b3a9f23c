// IprouteDatapath: the datapath on the real kernel through iproute2 (see iproute-kernel.ts).
import { FlockDatapath, type DatapathLogger } from './datapath.js';
import { IprouteKernel, type IprouteKernelOptions } from './iproute-kernel.js';

export interface IprouteDatapathOptions extends IprouteKernelOptions {
  logger?: DatapathLogger;
}

export class IprouteDatapath extends FlockDatapath {
  constructor(options: IprouteDatapathOptions = {}) {
    const { logger, ...kernel } = options;
    super(new IprouteKernel(kernel), logger);
  }
}
