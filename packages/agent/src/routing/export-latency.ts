// ADD → route exported: each time BIRD runs a new model, every address it announces on its own
// (a pinned or foreign host route, an anycast address) that the previous model did not is
// timed from its allocation's createdAt (the ADD). Anycast addresses wait for the pod's Ready,
// so theirs includes the readiness delay. The first model after start-up only primes the set
// (everything in it would look new), and an address older than maxAgeMs is not counted (a pod
// that became Ready again much later says nothing about the ADD path).
import type { AllocationEntry } from '../store/index.js';
import type { AnnouncementPlan } from './announcements.js';

export type ExportClass = 'pinned' | 'anycast';

export class ExportLatency {
  private exported = new Set<string>();
  private primed = false;

  constructor(
    private readonly observe: (cls: ExportClass, seconds: number) => void,
    private readonly maxAgeMs = 600_000,
  ) {}

  /** BIRD runs the model made from `plan` now. */
  applied(plan: AnnouncementPlan, entries: readonly AllocationEntry[], now: number): void {
    const created = new Map<string, number>();
    for (const e of entries) {
      const at = Date.parse(e.createdAt);
      for (const address of [e.ip6, ...(e.ip4 ? [e.ip4] : []), ...e.anycast]) {
        const before = created.get(address);
        if (before === undefined || at < before) created.set(address, at);
      }
    }
    const current = new Set<string>();
    const visit = (cls: ExportClass, address: string) => {
      const key = `${cls} ${address}`;
      current.add(key);
      if (!this.primed || this.exported.has(key)) return;
      const at = created.get(address);
      if (at !== undefined && now - at <= this.maxAgeMs)
        this.observe(cls, Math.max(0, now - at) / 1000);
    };
    for (const address of plan.hostRoutes) visit('pinned', address);
    for (const address of plan.anycast.keys()) visit('anycast', address);
    this.exported = current;
    this.primed = true;
  }
}
