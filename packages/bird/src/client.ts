// A client for BIRD's control socket, speaking the line protocol directly (no birdc). One
// connection per call. Connecting is retried only while BIRD is not up yet (the socket file is
// absent or nobody listens on it); every other failure is returned at once.
import { createConnection, type Socket } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import {
  BirdCommandError,
  BirdError,
  BirdProtocolError,
  REPLY_CODES,
  ReplyParser,
  isErrorCode,
  type BirdReply,
} from './reply.js';
import {
  parseBfdSessions,
  parseProtocols,
  parseProtocolsAll,
  type BfdSession,
  type ProtocolDetail,
  type ProtocolSummary,
} from './status.js';

/** What the manager and the agent need from BIRD; BirdClient is the real one. */
export interface BirdControl {
  /** Reload the configuration file; with `check`, run `configure check` first. */
  configure(options?: ConfigureOptions): Promise<ConfigureResult>;
  showProtocols(): Promise<ProtocolSummary[]>;
  /** Details and route counts of all protocols, or of the one named. */
  showProtocolsAll(name?: string): Promise<ProtocolDetail[]>;
}

export interface ConfigureOptions {
  /** Run `configure check` first and stop there if BIRD refuses the file. */
  check?: boolean;
  /** Read this file instead of the one BIRD was started with (`configure "FILE"`). */
  file?: string;
}

export interface ConfigureResult {
  /** 3 reconfigured, 4 in progress (protocols are restarting), 5 queued behind another. */
  code: number;
  message: string;
}

/** BIRD did not come up: the socket stayed absent or refused connections through every retry. */
export class BirdUnavailableError extends BirdError {
  override name = 'BirdUnavailableError';
  constructor(
    readonly socketPath: string,
    readonly attempts: number,
    readonly lastError: NodeJS.ErrnoException,
  ) {
    super(
      `BIRD control socket ${socketPath} unavailable after ${attempts} attempts: ${lastError.code ?? lastError.message}`,
      { cause: lastError },
    );
  }
}

interface BirdClientOptions {
  socketPath: string;
  /** Connection attempts while BIRD is not up (default 20). */
  attempts?: number;
  /** Pause between attempts in ms (default 500). */
  retryDelayMs?: number;
  /** Time limit for one connection, retries excluded (default 60 s: big configs take a while). */
  timeoutMs?: number;
  /** Injected in unit tests. */
  sleep?: (ms: number) => Promise<void>;
}

/** Errors that mean "BIRD is not up yet": retried. */
const NOT_UP = new Set(['ENOENT', 'ECONNREFUSED']);
const SYMBOL = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const ACCEPTED_CONFIGURE: readonly number[] = [
  REPLY_CODES.reconfigured,
  REPLY_CODES.reconfigurationInProgress,
  REPLY_CODES.reconfigurationQueued,
];

/** One open connection to BIRD, its welcome already read. */
interface BirdSession {
  /** Run one command; a 8xxx/9xxx reply rejects with BirdCommandError. */
  send(command: string): Promise<BirdReply>;
}

class Session implements BirdSession {
  private readonly parser = new ReplyParser();
  private readonly replies: BirdReply[] = [];
  private waiter: { resolve: (r: BirdReply) => void; reject: (e: Error) => void } | undefined;
  private failure: Error | undefined;

  constructor(private readonly socket: Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      try {
        this.replies.push(...this.parser.push(chunk));
      } catch (e) {
        this.fail(e as Error);
        return;
      }
      this.deliver();
    });
    socket.on('error', (e) => this.fail(new BirdProtocolError(`control socket: ${e.message}`)));
    socket.on('close', () =>
      this.fail(new BirdProtocolError('BIRD closed the control socket mid-reply')),
    );
  }

  fail(error: Error): void {
    this.failure ??= error;
    this.deliver();
  }

  private deliver(): void {
    if (!this.waiter) return;
    const reply = this.replies.shift();
    if (reply) this.waiter.resolve(reply);
    else if (this.failure) this.waiter.reject(this.failure);
    else return;
    this.waiter = undefined;
  }

  next(): Promise<BirdReply> {
    return new Promise((resolve, reject) => {
      this.waiter = { resolve, reject };
      this.deliver();
    });
  }

  async send(command: string): Promise<BirdReply> {
    if (/[\r\n]/.test(command))
      throw new BirdError(`a BIRD command is one line: ${JSON.stringify(command)}`);
    this.socket.write(`${command}\n`);
    const reply = await this.next();
    if (isErrorCode(reply.code)) throw new BirdCommandError(command, reply);
    return reply;
  }
}

export class BirdClient implements BirdControl {
  private readonly attempts: number;
  private readonly retryDelayMs: number;
  private readonly timeoutMs: number;
  private readonly sleep: (ms: number) => Promise<void>;

  constructor(private readonly options: BirdClientOptions) {
    this.attempts = options.attempts ?? 20;
    this.retryDelayMs = options.retryDelayMs ?? 500;
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.sleep = options.sleep ?? ((ms) => delay(ms));
  }

  get socketPath(): string {
    return this.options.socketPath;
  }

  /** Open a connection (retrying while BIRD is not up), run `work`, close. */
  async withSession<T>(work: (session: BirdSession) => Promise<T>): Promise<T> {
    const socket = await this.connect();
    const session = new Session(socket);
    const timer = setTimeout(
      () =>
        session.fail(
          new BirdProtocolError(`no complete reply from BIRD within ${this.timeoutMs} ms`),
        ),
      this.timeoutMs,
    );
    try {
      const welcome = await session.next();
      if (welcome.code !== REPLY_CODES.welcome) {
        throw new BirdProtocolError(
          `expected BIRD's welcome (0001), got ${welcome.code} ${welcome.text}`,
        );
      }
      return await work(session);
    } finally {
      clearTimeout(timer);
      socket.destroy();
    }
  }

  /** Run one command; a 8xxx/9xxx reply rejects with BirdCommandError. */
  command(command: string): Promise<BirdReply> {
    return this.withSession((s) => s.send(command));
  }

  async configure(options: ConfigureOptions = {}): Promise<ConfigureResult> {
    const file = options.file === undefined ? '' : ` ${quote(options.file)}`;
    return this.withSession(async (s) => {
      if (options.check) {
        const checked = await s.send(`configure check${file}`);
        if (checked.code !== REPLY_CODES.configurationOk)
          throw new BirdCommandError(`configure check${file}`, checked);
      }
      const reply = await s.send(`configure${file}`);
      if (!ACCEPTED_CONFIGURE.includes(reply.code))
        throw new BirdCommandError(`configure${file}`, reply);
      return { code: reply.code, message: reply.text };
    });
  }

  async showProtocols(): Promise<ProtocolSummary[]> {
    return parseProtocols(await this.command('show protocols'));
  }

  async showProtocolsAll(name?: string): Promise<ProtocolDetail[]> {
    if (name !== undefined && !SYMBOL.test(name))
      throw new BirdError(`not a BIRD protocol name: ${JSON.stringify(name)}`);
    // A quoted name is a pattern: an unknown protocol gives 8003 "No protocols match", not a parse error.
    const command = name === undefined ? 'show protocols all' : `show protocols all "${name}"`;
    try {
      return parseProtocolsAll(await this.command(command));
    } catch (e) {
      if (e instanceof BirdCommandError && e.code === REPLY_CODES.noProtocolsMatch) return [];
      throw e;
    }
  }

  /** The sessions of every BFD protocol, with their state and timers. */
  async showBfdSessions(): Promise<BfdSession[]> {
    return parseBfdSessions(await this.command('show bfd sessions'));
  }

  private async connect(): Promise<Socket> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await connectOnce(this.options.socketPath);
      } catch (e) {
        const err = e as NodeJS.ErrnoException;
        if (!NOT_UP.has(err.code ?? ''))
          throw new BirdError(`cannot connect to ${this.socketPath}: ${err.message}`);
        if (attempt >= this.attempts) throw new BirdUnavailableError(this.socketPath, attempt, err);
        await this.sleep(this.retryDelayMs);
      }
    }
  }
}

function connectOnce(path: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(path);
    socket.once('connect', () => {
      socket.off('error', reject);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

/** A file name as a BIRD string: BIRD 2.0 strings have no escapes, so quotes cannot appear. */
function quote(file: string): string {
  if (!file || /["\\\r\n]/.test(file))
    throw new BirdError(`unusable configuration file name: ${JSON.stringify(file)}`);
  return `"${file}"`;
}
