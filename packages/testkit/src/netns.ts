// Network namespaces owned by one test: unique names, everything runs inside them, and they
// are removed (with every process in them) even when the test fails or the process exits.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { run, type RunOptions, type RunResult } from '@flock/exec';

const live = new Set<string>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const name of live) destroySync(name);
  });
}

function destroySync(name: string): void {
  try {
    // stderr is not the user's business (e.g. "Peer netns reference is invalid" while a veth
    // peer's namespace is going away); the namespace is deleted either way.
    const pids = execFileSync('ip', ['netns', 'pids', name], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    })
      .split(/\s+/)
      .filter(Boolean);
    for (const pid of pids) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
  } catch {
    /* namespace already gone */
  }
  try {
    execFileSync('ip', ['netns', 'del', name], { stdio: 'ignore' });
  } catch {
    /* already gone */
  }
  live.delete(name);
}

/** A short unique name: `<prefix>-<6 hex>` (prefix at most 8 characters). */
export function uniqueName(prefix: string): string {
  if (!/^[a-z][a-z0-9]{0,7}$/.test(prefix))
    throw new Error(`bad namespace prefix ${JSON.stringify(prefix)}`);
  return `${prefix}-${randomBytes(3).toString('hex')}`;
}

const SILENCE_TABLE = 'flock_test_silence';
const SILENCE = `table inet ${SILENCE_TABLE} {
  chain input { type filter hook input priority -300; policy drop; }
  chain output { type filter hook output priority -300; policy drop; }
}
`;

export class Netns {
  private readonly children = new Set<ChildProcess>();

  private constructor(readonly name: string) {}

  /** Create a fresh namespace with `lo` up. */
  static async create(prefix = 'flt'): Promise<Netns> {
    installExitHook();
    const name = uniqueName(prefix);
    await run('ip', ['netns', 'add', name]);
    live.add(name);
    const ns = new Netns(name);
    await ns.exec('ip', ['link', 'set', 'lo', 'up']);
    return ns;
  }

  /** Path of the namespace file, as a CNI runtime passes it (CNI_NETNS). */
  get path(): string {
    return `/run/netns/${this.name}`;
  }

  /** Run a command inside the namespace and wait for it. */
  exec(file: string, args: readonly string[], options?: RunOptions): Promise<RunResult> {
    return run('ip', ['netns', 'exec', this.name, file, ...args], options);
  }

  /** Start a long-running process inside the namespace; it is killed on destroy(). */
  spawn(file: string, args: readonly string[], env?: NodeJS.ProcessEnv): ChildProcess {
    const child = spawn('ip', ['netns', 'exec', this.name, file, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: env ? { ...process.env, ...env } : process.env,
    });
    this.children.add(child);
    child.on('exit', () => this.children.delete(child));
    return child;
  }

  /**
   * Drop every packet in or out of the namespace, links left up: a power loss or a hung peer
   * as its neighbours see it (nothing but missing packets tells them). `unsilence` undoes it.
   */
  async silence(): Promise<void> {
    await this.exec('nft', ['-f', '-'], { input: SILENCE });
  }

  async unsilence(): Promise<void> {
    await this.exec('nft', ['delete', 'table', 'inet', SILENCE_TABLE]);
  }

  /** Kill everything inside and delete the namespace. Safe to call twice. */
  async destroy(): Promise<void> {
    for (const child of this.children) child.kill('SIGKILL');
    destroySync(this.name);
  }
}

/** Create a veth pair with one end in each namespace (names at most 15 characters). */
export async function vethBetween(a: Netns, aIf: string, b: Netns, bIf: string): Promise<void> {
  await run('ip', [
    'link',
    'add',
    aIf,
    'netns',
    a.name,
    'type',
    'veth',
    'peer',
    'name',
    bIf,
    'netns',
    b.name,
  ]);
  await a.exec('ip', ['link', 'set', aIf, 'up']);
  await b.exec('ip', ['link', 'set', bIf, 'up']);
}

/**
 * Put addresses ("2001:db8::1/64", "192.0.2.1/24") on an interface inside a namespace; IPv6
 * ones without duplicate address detection, so that they are usable at once.
 */
export async function addAddresses(
  ns: Netns,
  dev: string,
  cidrs: readonly string[],
): Promise<void> {
  for (const cidr of cidrs) {
    const v6 = cidr.includes(':');
    await ns.exec('ip', [
      v6 ? '-6' : '-4',
      'addr',
      'add',
      cidr,
      'dev',
      dev,
      ...(v6 ? ['nodad'] : []),
    ]);
  }
}

/** Names of namespaces this process created and has not removed yet (for leak checks). */
export function liveNamespaces(): string[] {
  return [...live];
}
