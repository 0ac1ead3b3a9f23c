// One agent's stream of peer records from a peer relay (the protocol: @flock/api peer-relay.ts).
// It keeps the relay's position (epoch, seq), so a reconnect to the same relay resumes where it
// stopped; a reconnect elsewhere, or past what the relay's log holds, receives a snapshot. Every
// line is checked (zod) and numbered changes must follow one another: anything else ends the
// stream, and the next one starts from a snapshot. The stream is held to the relay's ticks: three
// missed and it is dropped as dead.
import { request as httpsRequest } from 'node:https';
import { pipeline, type Readable } from 'node:stream';
import { createInflate } from 'node:zlib';
import { MAX_RELAY_LINE, RELAY_PATH, RELAY_TICK_MS, RelayEvent, type PeerPod } from '@flock/api';

/** What a relay stream feeds: a snapshot (begin … synced) or changes, in order. */
export interface RelaySink {
  /** A snapshot begins: what follows until `synced` is every record. */
  begin(full: boolean): void;
  put(namespace: string, pod: PeerPod): void;
  del(namespace: string, name: string): void;
  /** The snapshot (or the resumed backlog) is complete. */
  synced(): void;
}

/** Where a relay is and how to reach it. */
export interface RelayTarget {
  host: string;
  port: number;
  /** The name its certificate must carry (connections go to an address). */
  serverName: string;
  /** The CA that signed it (PEM). */
  ca: string;
}

/** Opens one GET of the relay: the response body, or an error with its status. */
export type RelayOpen = (path: string, token: string, signal: AbortSignal) => Promise<Readable>;

/** The real connection: HTTPS to the target, its certificate checked against `serverName`. */
export function httpsRelay(target: RelayTarget): RelayOpen {
  return (path, token, signal) =>
    new Promise((resolve, reject) => {
      const req = httpsRequest(
        {
          host: target.host,
          port: target.port,
          path,
          servername: target.serverName,
          ca: target.ca,
          headers: { authorization: `Bearer ${token}`, 'accept-encoding': 'deflate' },
          signal,
        },
        (res) => {
          if (res.statusCode === 200)
            return resolve(
              res.headers['content-encoding'] === 'deflate'
                ? pipeline(res, createInflate(), () => undefined)
                : res,
            );
          res.resume();
          reject(new Error(`peer relay answered ${res.statusCode ?? '?'}`));
        },
      );
      req.on('error', reject);
      req.end();
    });
}

/** The relay sent something the protocol does not allow. */
class RelayProtocolError extends Error {
  constructor(message: string) {
    super(`peer relay: ${message}`);
  }
}

/** Where a stream stands: the relay's epoch and the last change applied. */
interface Position {
  epoch: string;
  seq: number;
}

export class RelayStream {
  private position: Position | undefined;
  /** Within a full snapshot (between begin and synced), and the epoch it is of. */
  private inSnapshot = false;
  private snapshotEpoch = '';
  /** When the current stream last delivered something (0: no stream open). */
  private heardAt = 0;

  constructor(
    private readonly sink: RelaySink,
    private readonly tickMs = RELAY_TICK_MS,
  ) {}

  /** Read one connection to its end: resolves when the relay closes it, rejects on any fault. */
  async run(open: RelayOpen, token: string, signal: AbortSignal): Promise<void> {
    const p = this.position;
    const query = p ? `?epoch=${p.epoch}&since=${p.seq}` : '';
    const body = await open(`${RELAY_PATH}${query}`, token, signal);
    const onAbort = () => body.destroy();
    signal.addEventListener('abort', onAbort, { once: true });
    let dead: NodeJS.Timeout | undefined;
    const alive = () => {
      this.heardAt = Date.now();
      clearTimeout(dead);
      dead = setTimeout(() => body.destroy(new Error('peer relay silent')), this.tickMs * 3);
    };
    alive();
    let rest = '';
    let began = false;
    try {
      for await (const chunk of body as AsyncIterable<Buffer | string>) {
        alive();
        rest += String(chunk);
        let nl: number;
        while ((nl = rest.indexOf('\n')) >= 0) {
          const text = rest.slice(0, nl);
          rest = rest.slice(nl + 1);
          began = this.apply(text, began);
        }
        if (rest.length > MAX_RELAY_LINE) throw new RelayProtocolError('line too long');
      }
    } catch (error) {
      // A stream broken mid-snapshot, or one that broke the protocol, leaves no position: the
      // next one starts from a snapshot.
      if (this.inSnapshot || error instanceof RelayProtocolError) this.position = undefined;
      this.inSnapshot = false;
      throw error;
    } finally {
      this.heardAt = 0;
      clearTimeout(dead);
      signal.removeEventListener('abort', onAbort);
    }
  }

  private apply(text: string, began: boolean): boolean {
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new RelayProtocolError('a line is not JSON');
    }
    const parsed = RelayEvent.safeParse(json);
    if (!parsed.success) throw new RelayProtocolError(`bad line: ${parsed.error.message}`);
    const e = parsed.data;
    if (!began) {
      if (e.t !== 'begin') throw new RelayProtocolError('stream without a begin');
      this.inSnapshot = e.full;
      this.position = e.full ? undefined : { epoch: e.epoch, seq: e.seq };
      if (e.full) this.snapshotEpoch = e.epoch;
      this.sink.begin(e.full);
      if (!e.full) this.sink.synced();
      return true;
    }
    switch (e.t) {
      case 'begin':
        throw new RelayProtocolError('began twice');
      case 'synced':
        if (!this.inSnapshot) throw new RelayProtocolError('synced outside a snapshot');
        this.inSnapshot = false;
        this.position = { epoch: this.snapshotEpoch, seq: e.seq };
        this.sink.synced();
        return true;
      case 'tick':
        if (!this.inSnapshot && this.position && e.seq !== this.position.seq)
          throw new RelayProtocolError(`at ${e.seq}, this agent at ${this.position.seq}`);
        return true;
      case 'put':
        if (this.inSnapshot) this.sink.put(e.ns, e.pod);
        else {
          this.step(e.seq);
          this.sink.put(e.ns, e.pod);
        }
        return true;
      case 'del':
        if (this.inSnapshot) throw new RelayProtocolError('deleted within a snapshot');
        this.step(e.seq);
        this.sink.del(e.ns, e.name);
        return true;
    }
  }

  /** A numbered change: the next one, or the stream has lost something. */
  private step(seq: number | undefined): void {
    const p = this.position;
    if (!p || seq !== p.seq + 1)
      throw new RelayProtocolError(`change ${seq ?? '?'} after ${p?.seq ?? 'none'}`);
    p.seq = seq;
  }

  /** A stream is open and delivered something within `ms` (a snapshot still coming in). */
  flowing(ms: number): boolean {
    return this.heardAt > 0 && Date.now() - this.heardAt < ms;
  }

  /** Forget the position: the next stream starts from a snapshot (another relay). */
  reset(): void {
    this.position = undefined;
  }
}
