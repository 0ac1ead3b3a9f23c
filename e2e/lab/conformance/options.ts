// The conformance runners' command line: every value of a repeatable `--name VALUE` option.
export function option(args: readonly string[], name: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) if (args[i] === name && args[i + 1]) out.push(args[++i]!);
  return out;
}
