// Test infrastructure: what the crash suite does in each run — which pod, ADD or
// DEL, and where the agent is killed — drawn from a seeded generator so that a failing run
// is replayed exactly with the same seed (FLOCK_CRASH_SEED).
import { DATAPATH_FAULT_POINTS, STORE_FAULT_POINTS, type FaultPoint } from '../src/core/faults.js';

/** mulberry32: small, fast, good enough to pick test cases; the same seed, the same runs. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The store points fire at the n-th store write after start-up: ADD and DEL make two each. */
const storePoints = STORE_FAULT_POINTS.flatMap((p) => [`${p}#1`, `${p}#2`]);

/**
 * Every point a fresh ADD passes (anycast only for pods with anycast addresses). The datapath
 * points and `after-datapath` run alongside the policy step and `after-policy`, so a kill at
 * either side lands with the other side still running or already done.
 */
export function addPoints(anycast: boolean): string[] {
  const datapath = DATAPATH_FAULT_POINTS.filter(
    (p) => !p.startsWith('del-') && (anycast || p !== 'after-pod-anycast'),
  );
  const points: FaultPoint[] = [
    'after-pending',
    ...datapath,
    'after-datapath',
    'after-policy',
    'before-commit',
    'after-commit',
  ];
  return [...points, ...storePoints];
}

/**
 * Every point a DEL of a committed pod passes (its veth and routes go in one batch, the route
 * lines after the veth: `del-after-routes-removed` follows `del-after-veth-deleted`).
 */
export function delPoints(anycast: boolean): string[] {
  const points: FaultPoint[] = [
    'del-after-mark',
    'del-after-veth-deleted',
    'del-after-routes-removed',
    ...(anycast ? (['del-after-anycast-removed'] as const) : []),
    'del-after-datapath',
    'del-after-remove',
  ];
  return [...points, ...storePoints];
}

export interface CrashRun {
  slot: number;
  command: 'add' | 'del';
  /** Run first, to bring the pod to the state `command` starts from (DEL needs a pod added). */
  prepare?: 'add' | 'del';
  /** The --test-faults spec armed for this run. */
  fault: string;
}

/** Store writes of a prepare step (ADD: pending + commit; DEL: mark + remove). */
const PREPARE_WRITES = 2;

/**
 * The next run: ADD or DEL with even odds, a random point of it, a random pod that can reach
 * that point, prepared (DEL first / ADD first) so
 * that the command starts from a pod without / with an allocation — except one time in ten,
 * unprepared: a runtime repeating ADD, or cleaning up with DEL after a failed ADD, where the
 * armed point may not be reached at all. The prepare step passes none of the command's
 * points but its store writes, which a store point's count skips.
 */
export function nextRun(
  random: () => number,
  slots: { attached: boolean; anycast: boolean }[],
): CrashRun {
  const command = random() < 0.5 ? 'add' : 'del';
  const points = command === 'add' ? addPoints(true) : delPoints(true);
  let fault = points[Math.floor(random() * points.length)]!;
  // An anycast point is reached only by a pod with anycast addresses: pick one of those.
  const eligible = slots
    .map((s, i) => ({ s, i }))
    .filter(({ s }) => s.anycast || !fault.includes('anycast'));
  const { s, i: slot } = eligible[Math.floor(random() * eligible.length)]!;
  const natural = command === 'add' ? !s.attached : s.attached;
  const prepare = natural || random() < 0.1 ? undefined : command === 'add' ? 'del' : 'add';
  const store = /^(store-[a-z-]+)#(\d+)$/.exec(fault);
  if (store && prepare) fault = `${store[1]}#${Number(store[2]) + PREPARE_WRITES}`;
  return { slot, command, ...(prepare ? { prepare } : {}), fault };
}
