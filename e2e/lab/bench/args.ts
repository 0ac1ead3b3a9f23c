// The lab benches' integer options (`--pods 60`): absent → the default; outside 1..max → an error
// naming the option and its range.
export function intOption(name: string, def: number, max: number): number {
  const i = process.argv.indexOf(name);
  const v = i > 0 ? Number(process.argv[i + 1]) : def;
  if (!Number.isInteger(v) || v < 1 || v > max) throw new Error(`${name}: 1..${max}`);
  return v;
}
