// BIRD's control-socket line protocol (doc/reply_codes in BIRD's source). Every reply line is
//   "DDDD-text"  a line of a reply with code DDDD, more lines follow
//   " text"      one more line with the same code as the line before
//   "DDDD text"  the last line of the reply
//   "+text"      an unsolicited message, not part of any reply
// Codes: 0xxx done, 1xxx table entry, 2xxx table heading, 8xxx run-time error, 9xxx parse
// error (of the command). A reply is an error when its final code is 8xxx or 9xxx.

interface BirdReplyLine {
  code: number;
  text: string;
}

export interface BirdReply {
  /** Code of the final line. */
  code: number;
  /** Text of the final line. */
  text: string;
  /** Every line, the final one included, with continuation lines carrying their code. */
  lines: BirdReplyLine[];
}

export const REPLY_CODES = {
  welcome: 1,
  reading: 2,
  reconfigured: 3,
  reconfigurationInProgress: 4,
  reconfigurationQueued: 5,
  configurationOk: 20,
  configFileError: 8002,
  noProtocolsMatch: 8003,
  commandSyntaxError: 9001,
} as const;

export function isErrorCode(code: number): boolean {
  return code >= 8000;
}

/** Base of every error this package raises about BIRD. */
export class BirdError extends Error {
  override name = 'BirdError';
}

/** BIRD answered, but with something we cannot read: a broken line, a closed socket, a timeout. */
export class BirdProtocolError extends BirdError {
  override name = 'BirdProtocolError';
}

/** Where BIRD located a configuration error ("file:line:column message"). */
interface ConfigLocation {
  file: string;
  line: number;
  column: number;
}

/** BIRD refused a command (8xxx/9xxx, or an unexpected final code); `message` is BIRD's text. */
export class BirdCommandError extends BirdError {
  override name = 'BirdCommandError';
  readonly location: ConfigLocation | undefined;

  constructor(
    readonly command: string,
    readonly reply: BirdReply,
  ) {
    super(`BIRD refused "${command}": ${reply.text || `code ${reply.code}`}`);
    this.location = parseConfigLocation(reply.text);
  }

  get code(): number {
    return this.reply.code;
  }
}

/** "bird.conf:12:3 syntax error, ..." → {file, line, column}; undefined when absent. */
export function parseConfigLocation(text: string): ConfigLocation | undefined {
  const m = /^(.+?):(\d+):(\d+) /.exec(text);
  if (!m?.[1] || !m[2] || !m[3]) return undefined;
  return { file: m[1], line: Number(m[2]), column: Number(m[3]) };
}

const LINE = /^(\d{4})([ -])(.*)$/;

/** Turns the byte stream of one connection into replies; feed it chunks as they arrive. */
export class ReplyParser {
  private buffer = '';
  private lines: BirdReplyLine[] = [];
  private lastCode: number | undefined;

  /** Unsolicited "+" lines seen so far (BIRD's spontaneous messages). */
  readonly unsolicited: string[] = [];

  /** Consume a chunk; return the replies it completed. Throws BirdProtocolError on garbage. */
  push(chunk: string): BirdReply[] {
    this.buffer += chunk;
    const done: BirdReply[] = [];
    let newline: number;
    while ((newline = this.buffer.indexOf('\n')) >= 0) {
      const raw = this.buffer.slice(0, newline);
      this.buffer = this.buffer.slice(newline + 1);
      const reply = this.line(raw);
      if (reply) done.push(reply);
    }
    return done;
  }

  /** True when a reply has started but not finished (lines or bytes are waiting). */
  get partial(): boolean {
    return this.buffer.length > 0 || this.lines.length > 0;
  }

  private line(raw: string): BirdReply | undefined {
    const m = LINE.exec(raw);
    if (m) {
      const code = Number(m[1]);
      const text = m[3] ?? '';
      this.lines.push({ code, text });
      this.lastCode = code;
      if (m[2] === '-') return undefined;
      const reply = { code, text, lines: this.lines };
      this.lines = [];
      this.lastCode = undefined;
      return reply;
    }
    if (raw.startsWith('+')) {
      this.unsolicited.push(raw.slice(1));
      return undefined;
    }
    if (raw.startsWith(' ') && this.lastCode !== undefined) {
      this.lines.push({ code: this.lastCode, text: raw.slice(1) });
      return undefined;
    }
    throw new BirdProtocolError(`unexpected line from BIRD: ${JSON.stringify(raw.slice(0, 200))}`);
  }
}

/** Parse complete replies from recorded text (tests, logs). Throws if the text ends mid-reply. */
export function parseReplies(text: string): BirdReply[] {
  const parser = new ReplyParser();
  const replies = parser.push(text);
  if (parser.partial) throw new BirdProtocolError('text ends in the middle of a reply');
  return replies;
}
