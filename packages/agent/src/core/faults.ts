// Test-only fault injection: the named points inside ADD and DEL where a crash test may stop
// the agent (main.ts SIGKILLs it there), and the spec that arms them (`--test-faults`,
// FLOCK_TEST_FAULTS). Nothing here is active unless that setting is given. The points are
// listed in the agent's README; the crash suite (testing/reliability) picks among them.

/** Points in the CNI handlers (ADD, then DEL). */
const HANDLER_FAULT_POINTS = [
  'after-pending',
  'after-datapath',
  'after-policy',
  'before-commit',
  'after-commit',
  'del-after-mark',
  'del-after-datapath',
  'del-after-remove',
] as const;

/** Points inside the datapath: after each group of kernel changes of one step (kernel hook). */
export const DATAPATH_FAULT_POINTS = [
  'after-veth',
  'after-host-link',
  'after-host-addresses',
  'after-host-routes',
  'after-pod-link',
  'after-pod-addresses',
  'after-pod-neighbours',
  'after-pod-routes',
  'after-pod-anycast',
  'del-after-veth-deleted',
  'del-after-routes-removed',
  'del-after-anycast-removed',
] as const;

/** Points inside an allocation store write (any write: `#n` picks the n-th after start-up). */
export const STORE_FAULT_POINTS = [
  'store-after-temp-create',
  'store-before-rename',
  'store-after-rename',
] as const;

export type HandlerFaultPoint = (typeof HANDLER_FAULT_POINTS)[number];
export type DatapathFaultPoint = (typeof DATAPATH_FAULT_POINTS)[number];
export type StoreFaultPoint = (typeof STORE_FAULT_POINTS)[number];
export type FaultPoint = HandlerFaultPoint | DatapathFaultPoint | StoreFaultPoint;

export const FAULT_POINTS: readonly FaultPoint[] = [
  ...HANDLER_FAULT_POINTS,
  ...DATAPATH_FAULT_POINTS,
  ...STORE_FAULT_POINTS,
];

/** Called at a fault point; may throw or end the process. */
export type FaultHook<P extends FaultPoint = FaultPoint> = (point: P) => void | Promise<void>;

/**
 * Parse "point[#n][,point[#n]...]": each point fires on its n-th hit (default the first).
 * Throws naming an unknown point, so a typo in a crash test is an error, not a silent pass.
 */
export function parseFaultSpec(text: string): Map<FaultPoint, number> {
  const armed = new Map<FaultPoint, number>();
  for (const item of text.split(',').map((s) => s.trim())) {
    if (!item) continue;
    const match = /^([a-z-]+)(?:#([1-9]\d{0,5}))?$/.exec(item);
    const name = match?.[1] as FaultPoint | undefined;
    if (!name || !FAULT_POINTS.includes(name))
      throw new Error(
        `unknown test fault point ${JSON.stringify(item)}; known: ${FAULT_POINTS.join(', ')} (optionally #n)`,
      );
    armed.set(name, match?.[2] ? Number(match[2]) : 1);
  }
  return armed;
}

/** A hook that calls `fire` when an armed point is reached for the n-th time. */
export function faultInjector(
  armed: ReadonlyMap<FaultPoint, number>,
  fire: (point: FaultPoint) => void,
): FaultHook {
  const hits = new Map<FaultPoint, number>();
  return (point) => {
    const wanted = armed.get(point);
    if (wanted === undefined) return;
    const n = (hits.get(point) ?? 0) + 1;
    hits.set(point, n);
    if (n === wanted) fire(point);
  };
}
