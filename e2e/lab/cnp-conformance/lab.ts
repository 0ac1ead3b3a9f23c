// A lab for network-policy-api's conformance suite, and what a report says about the run: which
// binary ran and why, and which failures are not flock's (an SCTP probe on a kernel without it).
import { conformanceLab, type ConformanceLabOptions } from '../conformance/run.js';
import type { Lab } from '../core/lab.js';
import type { CaseResult } from './events.js';
import { preloadCnpImages } from './prepare.js';
import { CNP_BINARY, CNP_BINARY_NO_SCTP, SCTP_ONLY_TESTS } from './run.js';

/**
 * A conformance lab (../conformance/run.ts: flock as processes — the lab applies the chart's
 * ClusterNetworkPolicy CRD before the agents start — and Kubernetes' own node-failure timings,
 * which the suite's 10 StatefulSet pods need on a small machine) with agnhost under the suite's
 * image references.
 */
export function cnpLab(o: Omit<ConformanceLabOptions, 'tools' | 'preload'>): Promise<Lab> {
  return conformanceLab({ ...o, tools: ['go'], preload: preloadCnpImages });
}

/** A failure that is the kernel's, not flock's: an SCTP probe where the kernel has no SCTP. */
export function explainFailure(sctp: boolean): (c: CaseResult) => string | undefined {
  return (c) =>
    !sctp && /--protocol=sctp/.test(c.failure?.command ?? '')
      ? 'an SCTP probe: this kernel has no SCTP (nothing serves SCTP, and the probe cannot open a socket)'
      : undefined;
}

/** What the docs say about how this run relates to the upstream binary. */
export function runNotes(binary: string, tests: readonly string[]): string[] {
  const notes: string[] = [];
  if (binary === CNP_BINARY_NO_SCTP)
    notes.push(
      `This kernel has no SCTP, so the run used \`${CNP_BINARY_NO_SCTP}\` (e2e/cnp-conformance/nosctp): the upstream tests, suite and report unchanged, the base manifest without its SCTP servers (upstream's porter containers exit when they cannot listen, and the suite's setup waits for every pod to be Ready), and the SCTP-only tests ${SCTP_ONLY_TESTS.join(', ')} skipped. SCTP probes inside the other tests still run and fail; the table says which.`,
    );
  else notes.push(`The upstream package, unmodified (\`${CNP_BINARY}\`).`);
  if (tests.length)
    notes.push(
      `Only these tests were selected (\`-test.run\`): ${tests.join(', ')}. The suite counts tests filtered out by \`-test.run\` as passed, so its own report is not shown.`,
    );
  return notes;
}
