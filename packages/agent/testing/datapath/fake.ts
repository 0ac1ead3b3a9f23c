// FakeDatapath: the datapath's own logic over the in-memory kernel, for the agent's unit
// tests. It behaves like IprouteDatapath because it is the same code over a kernel model that
// the contract tests hold to the real kernel; tests can add and delete pod namespaces, change
// the kernel behind the datapath's back, inject a failure at a named step and count writes.
import { FlockDatapath, type DatapathLogger } from '../../src/datapath/datapath.js';
import { MemoryKernel } from './memory-kernel.js';
import { HOST, podNs, type Action, type NsState } from '../../src/datapath/model.js';
import { HOST_VETH_PREFIX } from '../../src/datapath/naming.js';
import type { DatapathStep } from '../../src/datapath/types.js';

export class FakeDatapath extends FlockDatapath {
  readonly memory: MemoryKernel;
  private netnsCounter = 0;

  constructor(logger?: DatapathLogger) {
    const memory = new MemoryKernel();
    super(memory, logger);
    this.memory = memory;
  }

  /**
   * A pod namespace at `path` (by default a new one), empty with lo down as the runtime hands
   * it over; an existing one is kept as it is. Returns the path.
   */
  createNetns(path = `/var/run/netns/fake-${++this.netnsCounter}`): string {
    if (!this.memory.hasNetns(path)) this.memory.addNetns(path);
    return path;
  }

  /** The pod's namespace is gone, as when the runtime removes the sandbox. */
  deleteNetns(path: string): void {
    this.memory.deleteNetns(path);
  }

  /** The next `times` kernel changes of `step` fail with `message`. */
  failAt(step: DatapathStep, message?: string, times = 1): void {
    this.memory.failAt(step, message, times);
  }

  /** The node namespace's state (links with addresses, main-table routes, neighbours). */
  hostState(): NsState {
    return this.memory.snapshot(HOST);
  }

  podState(netns: string): NsState {
    return this.memory.snapshot(podNs(netns));
  }

  /** Names of the flock veths on the node. */
  hostVethNames(): string[] {
    return this.hostState()
      .links.filter((l) => l.name.startsWith(HOST_VETH_PREFIX))
      .map((l) => l.name)
      .sort();
  }

  /** Drift for CHECK: a flock route of the node disappears (as `ip route del DST` would). */
  deleteHostRoute(dst: string): void {
    const route = this.hostState().routes.find((r) => r.dst === dst);
    if (!route || route.type === 'other') throw new Error(`no flock route to ${dst} on the node`);
    this.tamperHost([
      { op: 'route-del', step: 'host-routes', route: { ...route, type: route.type } },
    ]);
  }

  /** Change the node or a pod namespace behind the datapath's back (drift for CHECK). */
  tamperHost(actions: Action[]): void {
    this.memory.tamper(HOST, actions);
  }

  tamperPod(netns: string, actions: Action[]): void {
    this.memory.tamper(podNs(netns), actions);
  }

  /** Kernel changes made through the datapath so far. */
  get writes(): number {
    return this.memory.applied.length;
  }
}
