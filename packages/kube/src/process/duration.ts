// Durations as Go and the Kubernetes components write them (time.ParseDuration without a sign
// and without units below a millisecond): "1h30m", "90s", "1.5s", "500ms"; a bare "0" is zero.
// flock keeps durations as milliseconds.

const UNITS = [
  ['h', 3_600_000],
  ['m', 60_000],
  ['s', 1_000],
  ['ms', 1],
] as const;
const SIZE: Record<string, number> = Object.fromEntries(UNITS);
const DURATION = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h))+$/;
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h)/g;

/** Milliseconds of a Go-style duration (rounded to a whole millisecond); undefined if it is not one. */
export function parseDuration(text: string): number | undefined {
  if (text === '0') return 0;
  if (!DURATION.test(text)) return undefined;
  let total = 0;
  for (const [, n, unit] of text.matchAll(PART)) total += Number(n) * (SIZE[unit as string] ?? 0);
  return Math.round(total);
}

/** The shortest Go-style spelling of whole milliseconds: 5400000 → "1h30m", 1500 → "1s500ms". */
export function formatDuration(ms: number): string {
  if (!Number.isSafeInteger(ms) || ms < 0) throw new RangeError(`not a duration: ${ms} ms`);
  if (ms === 0) return '0';
  let rest = ms;
  let text = '';
  for (const [unit, size] of UNITS) {
    if (rest >= size) {
      text += `${Math.floor(rest / size)}${unit}`;
      rest %= size;
    }
  }
  return text;
}
