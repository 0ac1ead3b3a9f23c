// FakeBird: BIRD's control socket in memory, for the agent's unit tests (the real twin is
// @flock/bird's BirdClient against a real BIRD, in bird's kernel tests and the agent's cluster
// tests). Like BIRD it reads the config file when told to configure, refuses to answer while
// it is "down" (BirdUnavailableError, as the client reports a missing socket), and reports one
// BGP protocol per `protocol bgp NAME` of the file it runs, in the state the test sets.
import { readFile } from 'node:fs/promises';
import {
  BirdUnavailableError,
  type BirdControl,
  type ConfigureResult,
  type ProtocolDetail,
  type ProtocolSummary,
} from '@flock/bird';

export class FakeBird implements BirdControl {
  /** Is BIRD running (answering on its socket)? */
  up = false;
  /** Accepted reloads. */
  configures = 0;
  /** What each accepted reload announced (announced() after it), in order. */
  readonly history: string[][] = [];
  /** Every call: configure, show. */
  readonly calls: string[] = [];
  /** The config BIRD runs (read from the file at start() and at each configure). */
  running: string | undefined;
  /** BGP state per protocol name (default Established). */
  readonly bgpStates = new Map<string, string>();
  /** The next configure fails with this error (once). */
  failNextConfigure: Error | undefined;
  /** Every configure fails with this error while it is set. */
  failConfigure: Error | undefined;

  constructor(readonly configPath: string) {}

  /** BIRD starts: it reads its config file as `bird -c` does. */
  async start(): Promise<void> {
    this.running = await readFile(this.configPath, 'utf8');
    this.up = true;
  }

  stop(): void {
    this.up = false;
  }

  async configure(): Promise<ConfigureResult> {
    this.calls.push('configure');
    this.ensureUp();
    if (this.failNextConfigure) {
      const error = this.failNextConfigure;
      this.failNextConfigure = undefined;
      throw error;
    }
    if (this.failConfigure) throw this.failConfigure;
    this.running = await readFile(this.configPath, 'utf8');
    this.configures++;
    this.history.push(this.announced());
    return { code: 3, message: 'Reconfigured' };
  }

  async showProtocols(): Promise<ProtocolSummary[]> {
    return (await this.showProtocolsAll()).map(({ channels: _c, ...summary }) => summary);
  }

  async showProtocolsAll(): Promise<ProtocolDetail[]> {
    this.calls.push('show');
    this.ensureUp();
    const exported = this.announced().length;
    return [...(this.running ?? '').matchAll(/^protocol bgp (\S+) \{$/gm)].map(([, name]) => {
      const bgpState = this.bgpStates.get(name!) ?? 'Established';
      return {
        name: name!,
        proto: 'BGP',
        table: '---',
        state: bgpState === 'Established' ? 'up' : 'start',
        since: '2026-11-29 10:00:00',
        info: bgpState,
        bgpState,
        channels: [
          {
            name: 'ipv6',
            state: 'UP',
            table: 'master6',
            inputFilter: 'REJECT',
            outputFilter: 'flock_export6',
            imported: 0,
            exported: bgpState === 'Established' ? exported : 0,
            preferred: 0,
          },
        ],
      };
    });
  }

  /** Prefixes the running config announces (its static routes), sorted. */
  announced(): string[] {
    return [...(this.running ?? '').matchAll(/^ {2}route (\S+) blackhole;$/gm)]
      .map((m) => m[1]!)
      .sort();
  }

  private ensureUp(): void {
    if (!this.up)
      throw new BirdUnavailableError(
        `${this.configPath}.ctl`,
        1,
        Object.assign(new Error('connect ENOENT'), { code: 'ENOENT' }),
      );
  }
}
