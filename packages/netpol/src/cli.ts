#!/usr/bin/env node
// flock-netpol: the same functions the agent uses, for a person or a script.
//   flock-netpol render STATE.json   print the nftables script
//   flock-netpol check STATE.json    let the kernel validate it (nft -c), change nothing
//   flock-netpol apply STATE.json    apply it in the current network namespace
// STATE.json may be "-" for stdin.
import { readFileSync } from 'node:fs';
import { nftRunner } from './apply.js';
import { NetpolError } from './errors.js';
import { renderState } from './index.js';

const USAGE = 'usage: flock-netpol render|check|apply STATE.json (or - for stdin)';

async function main(argv: string[]): Promise<number> {
  const [command, file, ...extra] = argv;
  if (!command || !file || extra.length > 0 || !['render', 'check', 'apply'].includes(command)) {
    console.error(USAGE);
    return 2;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file === '-' ? 0 : file, 'utf8'));
  } catch (e) {
    console.error(`flock-netpol: cannot read ${file}: ${(e as Error).message}`);
    return 1;
  }
  const script = renderState(raw);
  if (command === 'render') process.stdout.write(script);
  else await nftRunner({ check: command === 'check' })(script);
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    console.error(
      `flock-netpol: ${e instanceof NetpolError ? 'invalid state: ' : ''}${(e as Error).message}`,
    );
    process.exitCode = 1;
  },
);
