// `npm test`: the whole suite, in the order that fails fastest. Every tier runs; a tier that
// needs root or a tool that is missing fails with what to install (see @flock/testkit).
//   1. nx sync:check   project references are in sync with the dependency graph; prettier;
//                      the workspace's own lint rules (tools/eslint-rules)
//   2. lint, typecheck, build, unit tests of every project
//   3. kernel tier     (root, network namespaces; one project at a time)
//   4. cluster tier    (the real control plane; one project at a time)
// It ends with the failed tests by name, then one line "N passed, N failed" summed from every
// vitest run.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const results = join(root, '.cache', 'test-results');
rmSync(results, { recursive: true, force: true });
mkdirSync(results, { recursive: true });
const only = process.argv.slice(2);

const env = {
  ...process.env,
  NX_DAEMON: 'false',
  NX_NO_CLOUD: 'true',
  NX_TUI: 'false',
  FLOCK_TEST_RESULTS: results,
};
const steps = [
  ['nx sync:check', ['nx', 'sync:check']],
  ['prettier --check', ['prettier', '--check', '.']],
  ['lint rules', ['node', '--test', 'tools/eslint-rules/*.test.mjs']],
  [
    'lint, typecheck, build, unit',
    [
      'nx',
      'run-many',
      '-t',
      'lint',
      'typecheck',
      'build',
      'test',
      '--parallel=2',
      '--outputStyle=stream',
      '--skip-nx-cache',
    ],
  ],
  ['kernel tier', ['nx', 'run-many', '-t', 'test-kernel', '--parallel=1', '--outputStyle=stream']],
  [
    'cluster tier',
    ['nx', 'run-many', '-t', 'test-cluster', '--parallel=1', '--outputStyle=stream'],
  ],
].filter(([name]) => only.length === 0 || only.some((o) => name.includes(o)));

// Every step runs even when an earlier one failed: one CI run shows every broken tier.
const failedSteps = [];
for (const [name, args] of steps) {
  process.stdout.write(`\n=== ${name} ===\n`);
  const r = spawnSync('npx', args, { cwd: root, env, stdio: 'inherit' });
  if (r.status !== 0) failedSteps.push(name);
}

let passed = 0;
let failed = 0;
// CI keeps only the tail of the log: name every failed test and file here, at the end.
const failures = [];
for (const file of readdirSync(results).filter((f) => f.endsWith('.json'))) {
  const report = JSON.parse(readFileSync(join(results, file), 'utf8'));
  passed += report.numPassedTests ?? 0;
  failed += (report.numFailedTests ?? 0) + (report.numFailedTestSuites ?? 0);
  for (const suite of report.testResults ?? []) {
    const where = `${file.replace(/\.json$/, '')}: ${suite.name.replace(root, '')}`;
    const tests = (suite.assertionResults ?? []).filter((t) => t.status === 'failed');
    for (const t of tests)
      failures.push(`${where} > ${t.fullName}\n    ${firstLine(t.failureMessages?.[0])}`);
    if (suite.status === 'failed' && tests.length === 0)
      failures.push(`${where}\n    ${firstLine(suite.message)}`);
  }
}
if (failures.length) process.stdout.write(`\nFailed tests:\n  ${failures.join('\n  ')}\n`);
if (failedSteps.length) {
  process.stdout.write(`\nFAILED steps: ${failedSteps.join(', ')}\n`);
  if (failed === 0) failed = failedSteps.length;
}
process.stdout.write(`\n${passed} passed, ${failed} failed\n`);
process.exit(failedSteps.length ? 1 : 0);

function firstLine(text) {
  return (text ?? '').split('\n').find((l) => l.trim() !== '') ?? '(no message)';
}
