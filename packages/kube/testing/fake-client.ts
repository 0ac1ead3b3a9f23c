// One client's connection to the fake API server, with its own network switch: disconnect()
// makes its requests fail and resets its watches, partition() makes everything it sends hang
// (a black-holed network), heal() restores it. Leader-election tests give each candidate one.
import type { FakeApiServer } from './fake-apiserver.js';
import type { FakeWatch } from './fake-watch.js';
import type {
  KubeRequest,
  KubeTransport,
  WatchEvent,
  WatchRequest,
} from '../src/transport/transport.js';

export class FakeClient implements KubeTransport {
  /** up: working; down: connection refused; hang: requests never answer. */
  network: 'up' | 'down' | 'hang' = 'up';
  private readonly watches = new Set<FakeWatch>();

  constructor(private readonly server: FakeApiServer) {}

  request(req: KubeRequest): Promise<unknown> {
    if (this.network === 'down') return Promise.reject(refused());
    if (this.network === 'hang') {
      return new Promise((_, reject) =>
        // abort() without a reason sets a DOMException, an Error.
        req.signal?.addEventListener('abort', () => reject(req.signal?.reason as Error), {
          once: true,
        }),
      );
    }
    return this.server.request(req);
  }

  watch(
    req: WatchRequest,
    onEvent: (e: WatchEvent) => void,
    onDone: (err?: unknown) => void,
  ): () => void {
    if (this.network === 'down') {
      queueMicrotask(() => onDone(refused()));
      return () => {};
    }
    const w = this.server.openWatch(req, onEvent, (err) => {
      if (w) this.watches.delete(w);
      onDone(err);
    });
    if (w) {
      this.watches.add(w);
      if (this.network === 'hang') w.silence();
    }
    return () => {
      if (w) this.watches.delete(w);
      w?.abort();
    };
  }

  /** Connection refused from now on; open watches are reset. */
  disconnect(): void {
    this.network = 'down';
    for (const w of this.watches) w.drop(refused());
  }

  /** Nothing gets through any more, and nothing fails either (until aborted). */
  partition(): void {
    this.network = 'hang';
    for (const w of this.watches) w.silence();
  }

  heal(): void {
    this.network = 'up';
  }
}

function refused(): Error {
  return Object.assign(new Error('connect ECONNREFUSED (fake)'), { code: 'ECONNREFUSED' });
}
