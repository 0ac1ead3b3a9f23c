// Test-only: a Kernel that applies a batch one step at a time and calls a fault hook after
// each step took effect (after the veth was created, after the addresses, after the routes…),
// so a crash test can stop the agent between the kernel changes of one ADD or DEL. Only used
// when a hook is given (IprouteDatapath's `fault` option, armed by --test-faults); without it
// the datapath keeps its one batch per side.
import { DATAPATH_FAULT_POINTS, type DatapathFaultPoint, type FaultHook } from '../core/faults.js';
import { ApplyError, type Kernel } from './kernel.js';
import type { Action, NsRef, NsState, ReadQuery } from './model.js';
import type { SysctlResult } from './types.js';

/** The datapath point reached once `action` (and the rest of its step) took effect. */
export function datapathFaultPoint(action: Action): DatapathFaultPoint | undefined {
  switch (action.op) {
    case 'veth-add':
      return 'after-veth';
    case 'link-del':
      return 'del-after-veth-deleted';
    case 'route-del':
      return action.step === 'host-routes' ? 'del-after-routes-removed' : undefined;
    case 'addr-del':
      return action.step === 'pod-anycast' ? 'del-after-anycast-removed' : undefined;
    default: {
      const point = `after-${action.step}`;
      return (DATAPATH_FAULT_POINTS as readonly string[]).includes(point)
        ? (point as DatapathFaultPoint)
        : undefined;
    }
  }
}

/** Consecutive actions that reach the same fault point (or none), with their first index. */
function groups(
  actions: Action[],
): { start: number; actions: Action[]; point?: DatapathFaultPoint }[] {
  const out: { start: number; actions: Action[]; point?: DatapathFaultPoint }[] = [];
  actions.forEach((action, index) => {
    const point = datapathFaultPoint(action);
    const last = out.at(-1);
    if (last && last.point === point) last.actions.push(action);
    else out.push({ start: index, actions: [action], ...(point ? { point } : {}) });
  });
  return out;
}

/** The same failure, with its index counted in the caller's whole list. */
function shifted(e: ApplyError, offset: number): ApplyError {
  return new ApplyError(e.step, e.index < 0 ? -1 : e.index + offset, e.exists, e.message, {
    cause: e.cause,
  });
}

export class FaultKernel implements Kernel {
  constructor(
    private readonly inner: Kernel,
    private readonly fault: FaultHook<DatapathFaultPoint>,
  ) {}

  read(ns: NsRef, query: ReadQuery): Promise<NsState> {
    return this.inner.read(ns, query);
  }

  async apply(ns: NsRef, actions: Action[]): Promise<void> {
    for (const group of groups(actions)) {
      try {
        await this.inner.apply(ns, group.actions);
      } catch (e) {
        throw e instanceof ApplyError ? shifted(e, group.start) : e;
      }
      if (group.point) await this.fault(group.point);
    }
  }

  async applyAll(ns: NsRef, actions: Action[]): Promise<ApplyError[]> {
    const failures: ApplyError[] = [];
    for (const group of groups(actions)) {
      const failed = await this.inner.applyAll(ns, group.actions);
      failures.push(...failed.map((e) => shifted(e, group.start)));
      if (group.point) await this.fault(group.point);
    }
    return failures;
  }

  netnsExists(ns: NsRef): Promise<boolean> {
    return this.inner.netnsExists(ns);
  }

  writeHostSysctls(values: Record<string, string>): Promise<SysctlResult[]> {
    return this.inner.writeHostSysctls(values);
  }
}
