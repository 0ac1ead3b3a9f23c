// The SpawnServer's child: a small process that spawns programs for its parent. Why it exists:
// Linux forks a process to spawn one, and the cost of that fork grows with the parent's memory
// (page tables): measured 1.9 ms per spawn from a 52 MiB Node process, 20.9 ms from a 303 MiB
// one. The agent is the big one; this child stays small. Requests on stdin, replies on stdout.
import { createInterface } from 'node:readline';
import { CommandError, runDirect } from './run.js';
import { SpawnRequest, type SpawnReply } from './spawn-protocol.js';

const reply = (r: SpawnReply) => process.stdout.write(`${JSON.stringify(r)}\n`);

async function serve(line: string): Promise<void> {
  let request: SpawnRequest;
  try {
    request = SpawnRequest.parse(JSON.parse(line));
  } catch (error) {
    // A parent bug, not a program's failure: say so on stderr and carry on.
    process.stderr.write(`spawn server: bad request: ${String(error)}\n`);
    return;
  }
  const { id, file, args, ...options } = request;
  try {
    const r = await runDirect(file, args, options);
    reply({ id, ok: true, ...r });
  } catch (error) {
    const e =
      error instanceof CommandError
        ? error
        : new CommandError(file, args, null, '', '', String(error));
    reply({ id, ok: false, code: e.code, stdout: e.stdout, stderr: e.stderr, detail: e.detail });
  }
}

const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => void serve(line));
// The parent closed its end (it stopped or died): nothing more to do.
lines.on('close', () => process.exit(0));
