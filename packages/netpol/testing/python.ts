// python3 for the kernel tier's packet helpers (sctp-probe.py, the benches' hostport-flood.py).
import { run } from '@flock/exec';

let interpreter: Promise<string> | undefined;
/**
 * python3's own path, looked up once: a version manager's shim on PATH (pyenv) costs 100 ms a
 * run. Run with -S (no site packages: the scripts need only the standard library).
 */
export function python(): Promise<string> {
  interpreter ??= run('python3', ['-c', 'import sys; print(sys.executable)']).then((r) =>
    r.stdout.trim(),
  );
  return interpreter;
}
