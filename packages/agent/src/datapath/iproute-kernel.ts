// The real kernel, through iproute2: one `ip -batch -` process per namespace and direction
// (reads with -json, writes stopping at the first failure), run through @flock/exec with
// argument arrays. Pod namespaces are entered with nsenter --net=PATH, which accepts any
// namespace file (ip -n only knows names under /run/netns).
import { readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CommandError, run } from '@flock/exec';
import {
  FORCE_WRITE_OPTIONS,
  READ_OPTIONS,
  WRITE_OPTIONS,
  actionTokens,
  batchText,
  ipCommand,
  readLines,
  sysctlCommand,
  sysctlReadCommand,
} from './commands.js';
import { failedBatchLines, parseReadBatch } from './iproute-json.js';
import { ApplyError, NetnsMissingError, type Kernel } from './kernel.js';
import { emptyState, type Action, type NsRef, type NsState, type ReadQuery } from './model.js';
import type { SysctlResult } from './types.js';
import { validNetns } from './validate.js';

export type Runner = typeof run;

export interface IprouteKernelOptions {
  /**
   * Run the node side in this namespace instead of the process's own: kernel tests give a
   * test namespace here. Production leaves it unset.
   */
  hostNetns?: string;
  /** Replaces @flock/exec's run (tests count commands with it). */
  runner?: Runner;
  /** Per-command timeout (default DEFAULT_COMMAND_TIMEOUT_MS). */
  timeoutMs?: number;
  /** Root of the sysctl tree written when hostNetns is unset (default /proc/sys). */
  procSys?: string;
}

/**
 * How long one `ip` or `nsenter ip` may run. Each line of a batch waits for the kernel's RTNL
 * lock, which a node creating and destroying many network namespaces at once holds for long:
 * with 20 pods starting on a 2-core lab node, batches waited more than 10 s (the old limit), and
 * the ADDs that gave up were retried by the runtime, adding work where the kernel was busiest.
 * Two batches of an ADD still fit the plugin's 60 s budget (the conflist's timeoutMs).
 */
export const DEFAULT_COMMAND_TIMEOUT_MS = 20_000;

const stderrOf = (e: unknown) => (e instanceof CommandError ? e.stderr.trim() : '');

export class IprouteKernel implements Kernel {
  private readonly hostNetns: string | undefined;
  private readonly runner: Runner;
  private readonly timeoutMs: number;
  private readonly procSys: string;

  constructor(options: IprouteKernelOptions = {}) {
    this.hostNetns = options.hostNetns === undefined ? undefined : validNetns(options.hostNetns);
    this.runner = options.runner ?? run;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS;
    this.procSys = options.procSys ?? '/proc/sys';
  }

  async netnsExists(ns: NsRef): Promise<boolean> {
    if (ns.kind === 'host') return true;
    try {
      await stat(ns.netns);
      return true;
    } catch {
      return false;
    }
  }

  async read(ns: NsRef, query: ReadQuery): Promise<NsState> {
    if (ns.kind === 'pod' && !(await this.netnsExists(ns))) throw new NetnsMissingError(ns.netns);
    const lines = readLines(query);
    if (!lines.length) return emptyState();
    const { file, args } = ipCommand(ns, this.hostNetns, READ_OPTIONS);
    // With -force, ip exits 1 when a line failed; parseReadBatch decides whether that matters.
    const res = await this.runner(file, args, {
      input: batchText(lines.map((l) => l.tokens)),
      okCodes: [0, 1],
      timeoutMs: this.timeoutMs,
    });
    return parseReadBatch(lines, res.stdout, res.stderr);
  }

  async apply(ns: NsRef, actions: Action[]): Promise<void> {
    if (!actions.length) return;
    const { file, args } = ipCommand(ns, this.hostNetns, WRITE_OPTIONS);
    try {
      await this.runner(file, args, {
        input: batchText(actions.map(actionTokens)),
        timeoutMs: this.timeoutMs,
      });
    } catch (e) {
      const stderr = stderrOf(e);
      // ip names the failing line ("Command failed -:N"); an argument it cannot parse ends
      // the batch without one, and is charged to the first line.
      const line = [...failedBatchLines(stderr)][0];
      const index = line !== undefined ? line - 1 : -1;
      const action = actions[index] ?? actions[0];
      const what = action ? actionTokens(action).join(' ') : '';
      throw new ApplyError(
        action?.step ?? 'validate',
        index,
        /File exists/.test(stderr),
        `${what}: ${stderr || (e instanceof Error ? e.message : String(e))}`,
        { cause: e },
      );
    }
  }

  async applyAll(ns: NsRef, actions: Action[]): Promise<ApplyError[]> {
    if (!actions.length) return [];
    const { file, args } = ipCommand(ns, this.hostNetns, FORCE_WRITE_OPTIONS);
    const res = await this.runner(file, args, {
      input: batchText(actions.map(actionTokens)),
      okCodes: [0, 1, 255],
      timeoutMs: this.timeoutMs,
    });
    return [...failedBatchLines(res.stderr)].map((line) => {
      const action = actions[line - 1];
      return new ApplyError(
        action?.step ?? 'validate',
        line - 1,
        false,
        `${action ? actionTokens(action).join(' ') : `line ${line}`}: ${res.stderr.trim()}`,
      );
    });
  }

  async writeHostSysctls(values: Record<string, string>): Promise<SysctlResult[]> {
    const out: SysctlResult[] = [];
    for (const [key, value] of Object.entries(values)) {
      let found: string | undefined;
      try {
        found = await this.readHostSysctl(key);
        if (found !== value) await this.writeHostSysctl(key, value);
        out.push({ key, value, ok: true, changed: found !== value });
      } catch (e) {
        const error = stderrOf(e) || (e instanceof Error ? e.message : String(e));
        const why = found === undefined ? error : `it is ${found}: ${error}`;
        out.push({ key, value, ok: false, changed: false, error: why });
      }
    }
    return out;
  }

  private async readHostSysctl(key: string): Promise<string> {
    if (this.hostNetns !== undefined) {
      const { file, args } = sysctlReadCommand(this.hostNetns, key);
      return (await this.runner(file, args, { timeoutMs: this.timeoutMs })).stdout.trim();
    }
    // /proc/sys/net belongs to the namespace of the process that opens it: ours.
    return (await readFile(this.sysctlPath(key), 'utf8')).trim();
  }

  private async writeHostSysctl(key: string, value: string): Promise<void> {
    if (this.hostNetns !== undefined) {
      const { file, args } = sysctlCommand(this.hostNetns, key, value);
      await this.runner(file, args, { timeoutMs: this.timeoutMs });
      return;
    }
    // r+: never create a file; a key the kernel does not have is an error, as in /proc.
    await writeFile(this.sysctlPath(key), value, { flag: 'r+' });
  }

  private sysctlPath(key: string): string {
    return join(this.procSys, ...key.split('.'));
  }
}
