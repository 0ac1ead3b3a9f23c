// A Tayga translator of the node, supervised: converge() makes the running Tayga match what the
// NodeConfig asks (start, restart with a new configuration, or stop and remove its device); a
// Tayga that exits on its own is started again after a backoff. A Tayga left behind by an agent
// that died (its pid file) is stopped before a new one takes the TUN device, which only one
// process can hold. Two run on a node, each with its profile: NAT64 (spec.nat64, tayga.ts) and
// the inter-node translation of a Private pool's IPv4 (siit.ts).
import { join } from 'node:path';
import type { Logger } from '@flock/api';
import type { RunOptions, RunResult } from '@flock/exec';
import { Backoff } from '@flock/kube';

/** Tayga's process, as much of a ChildProcess as the translator uses. */
export interface TranslatorProcess {
  readonly pid?: number | undefined;
  once(
    event: 'exit',
    listener: (code: number | null, signal: NodeJS.Signals | null) => void,
  ): unknown;
  kill(signal?: NodeJS.Signals): boolean;
}

/** The kernel and process edge (main.ts: @flock/exec's run and node's spawn; tests: a fake). */
export interface TranslatorEdge {
  run(file: string, args: readonly string[], options?: RunOptions): Promise<RunResult>;
  spawn(file: string, args: readonly string[]): TranslatorProcess;
  writeFile(path: string, text: string): Promise<void>;
  readFile(path: string): Promise<string | undefined>;
  /** The command line of a live process, or undefined (/proc/PID/cmdline). */
  cmdline(pid: number): Promise<string[] | undefined>;
  /** Send a signal to a process (process.kill). */
  kill(pid: number, signal: NodeJS.Signals): void;
}

/** One translator's part: its device, files, configuration and the routes through it. */
export interface TranslatorProfile<T> {
  /** What the logs call it. */
  name: string;
  /** Its TUN device. */
  iface: string;
  /** Its files in the directory: NAME.conf, NAME.pid. */
  file: string;
  /** What Tayga runs with: another key restarts it (NodeConfig status writes change nothing). */
  key(want: T): string;
  /** tayga.conf; a text unlike the last one's gets a fresh device (no stale route stays). */
  config(want: T, dir: string): string;
  /** The commands that make the device and route through it (idempotent). */
  commands(want: T, config: string, tayga: string): [string, string[]][];
}

/** The applied state with the translator off (the device removed). */
const OFF = 'off';

/** A Tayga that ran this long before it exited starts again without delay growth. */
const STABLE_MS = 60_000;

export interface TranslatorOptions {
  /** Where the configuration, the pid file and NAT64's dynamic.map live (kept across restarts). */
  dir: string;
  /** The tayga program (--tayga). */
  tayga: string;
  logger: Logger;
  /** Restart delays of a Tayga that exited (default 1 s growing to 30 s). */
  restart?: { baseMs: number; maxMs: number };
}

export interface TranslatorStatus<T> {
  /** What it runs with (undefined: off). */
  want: T | undefined;
  running: boolean;
  /** Times Tayga exited on its own and was started again. */
  restarts: number;
}

export class TaygaTranslator<T> {
  private want: T | undefined;
  private child: TranslatorProcess | undefined;
  /** What the kernel and Tayga were last made to match: a configuration's key, OFF, or nothing. */
  private applied: string | undefined;
  private restarts = 0;
  private restartTimer: NodeJS.Timeout | undefined;
  private readonly backoff: Backoff;
  private chain: Promise<void> = Promise.resolve();
  private stopped = false;

  constructor(
    private readonly edge: TranslatorEdge,
    private readonly o: TranslatorOptions,
    private readonly profile: TranslatorProfile<T>,
  ) {
    this.backoff = new Backoff({ ...(o.restart ?? { baseMs: 1000, maxMs: 30_000 }), jitter: 0.2 });
  }

  private get config() {
    return join(this.o.dir, `${this.profile.file}.conf`);
  }
  private get pidFile() {
    return join(this.o.dir, `${this.profile.file}.pid`);
  }

  status(): TranslatorStatus<T> {
    return { want: this.want, running: this.child !== undefined, restarts: this.restarts };
  }

  /** Make the translator match `want` (serialized: calls run one after another). */
  converge(want: T | undefined): Promise<void> {
    this.want = want;
    const next = this.chain.then(() => this.reconcile());
    this.chain = next.then(
      () => undefined,
      (e: unknown) => this.retryLater(`${this.profile.name} translator did not start`, e),
    );
    return next;
  }

  /**
   * The periodic check: a device someone deleted takes Tayga's routes with it, and Tayga does not
   * exit (its reads fail, it goes on): start over, as on a new configuration.
   */
  async check(): Promise<void> {
    if (this.stopped || this.want === undefined || this.applied === undefined) return;
    if (this.applied === OFF) return;
    const link = await this.edge.run('ip', ['link', 'show', this.profile.iface], {
      okCodes: [0, 1],
    });
    if (link.code === 0) return;
    this.o.logger.warn(`${this.profile.name} translator: its device is gone; making it again`, {
      iface: this.profile.iface,
    });
    this.applied = undefined;
    await this.converge(this.want);
  }

  /** Converge again after the backoff (a failed start, or a Tayga that exited). */
  private retryLater(why: string, detail: unknown): void {
    if (this.stopped || this.restartTimer) return;
    const delay = this.backoff.next();
    this.o.logger.error(why, {
      ...(detail instanceof Error ? { error: detail.message } : (detail as object)),
      retryInMs: Math.round(delay),
    });
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      void this.converge(this.want).catch(() => undefined);
    }, delay);
  }

  private async reconcile(): Promise<void> {
    if (this.stopped) return;
    const want = this.want;
    const { iface } = this.profile;
    const key = want === undefined ? OFF : this.profile.key(want);
    if (key === this.applied && (key === OFF || this.child)) return;
    this.applied = undefined;
    await this.stopChild();
    await this.stopLeftover();
    if (want === undefined) {
      // Off: the device goes, and every route through it with it.
      await this.edge.run('ip', ['link', 'del', iface], { okCodes: [0, 1] });
      this.applied = OFF;
      return;
    }
    // A new configuration: a fresh device, so no route of the old prefix or pool stays.
    const previous = await this.edge.readFile(this.config);
    const text = this.profile.config(want, this.o.dir);
    if (previous !== undefined && previous !== text)
      await this.edge.run('ip', ['link', 'del', iface], { okCodes: [0, 1] });
    await this.edge.writeFile(this.config, text);
    for (const [file, args] of this.profile.commands(want, this.config, this.o.tayga))
      await this.edge.run(file, args);
    const child = this.start();
    this.applied = key;
    // Filed for a later agent: a Tayga this agent leaves behind is stopped before the next one.
    if (child.pid !== undefined) await this.edge.writeFile(this.pidFile, `${child.pid}\n`);
    this.o.logger.info(`${this.profile.name} translator started`, { ...want, iface });
  }

  private start(): TranslatorProcess {
    const child = this.edge.spawn(this.o.tayga, ['-c', this.config, '-d']);
    const started = Date.now();
    this.child = child;
    child.once('exit', (code, signal) => {
      if (this.child !== child) return; // stopped on purpose
      this.child = undefined;
      if (this.stopped) return;
      if (Date.now() - started >= STABLE_MS) this.backoff.reset();
      this.restarts++;
      this.retryLater(`${this.profile.name} translator exited; starting it again`, {
        code,
        signal,
      });
    });
    return child;
  }

  private async stopChild(): Promise<void> {
    clearTimeout(this.restartTimer);
    this.restartTimer = undefined;
    const child = this.child;
    if (!child) return;
    this.child = undefined;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  }

  /** A Tayga of an earlier agent (its pid file), still holding the device: stopped. */
  private async stopLeftover(): Promise<void> {
    const raw = await this.edge.readFile(this.pidFile);
    const pid = Number(raw?.trim());
    if (!Number.isInteger(pid) || pid <= 1) return;
    const argv = await this.edge.cmdline(pid);
    if (!argv?.some((a) => a.endsWith('tayga')) || !argv.includes(this.config)) return;
    this.o.logger.warn(`stopping a ${this.profile.name} translator left by an earlier agent`, {
      pid,
    });
    try {
      this.edge.kill(pid, 'SIGTERM');
    } catch {
      return; // gone meanwhile
    }
    for (let i = 0; i < 50 && (await this.edge.cmdline(pid)); i++)
      await new Promise((r) => setTimeout(r, 100));
  }

  /** The agent stops: Tayga with it; the device and its routes stay for the next agent. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.chain;
    this.backoff.reset();
    await this.stopChild();
  }
}
