// A benchmark watcher's peer relay stream (the `peer-relay` design): the agent's own HTTPS
// connection (relay-client.ts httpsRelay: inflated when the relay deflates it), its bytes passed
// on untouched to the agent's RelayStream, its lines counted on the way as a watch's are
// (CountingTransport, watch "peer-relay"): a stream opened is a watch, a snapshot's records are
// listed, a change is an event (`put` modified, `del` deleted), a tick a bookmark; and the
// lines' bytes, uncompressed. A `put` whose labels carry the churn's mark is a lag (live, or in a
// snapshot: a write the agent had not seen yet), seen when its bytes arrive, as a watch event is
// seen just before its cache applies it. What the wire carries (deflated, in TLS) is in the
// watcher's rchar (proc.ts): a socket is read too.
import { Transform, pipeline } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import type { RelayOpen } from '../../src/policy/relay-client.js';
import { FLIP_LABEL, type CountingTransport } from './counting-transport.js';

/** The watch name the relay's lines are counted under. */
export const RELAY_WATCH = 'peer-relay';

/** The type of a relay line, as the relay encodes it ({"t":"put",...}); undefined otherwise. */
const typeOf = (line: string) => /^\{"t":"(\w+)"/.exec(line)?.[1];

/** `open`, each stream it opens counted into `counter`'s counts and lags. */
export function countingRelay(open: RelayOpen, counter: CountingTransport): RelayOpen {
  return async (path, token, signal) => {
    const body = await open(path, token, signal);
    const counts = counter.of(RELAY_WATCH);
    counts.watches++;
    const decoder = new StringDecoder('utf8');
    let rest = '';
    let inSnapshot = false;
    const line = (text: string) => {
      const t = typeOf(text);
      if (t === 'put') {
        if (inSnapshot) counts.listed++;
        else counts.modified++;
        // A write can reach an agent in a snapshot too (a new relay's, after a crash): seen then.
        if (inSnapshot && !text.includes(FLIP_LABEL)) return;
        const e = JSON.parse(text) as { pod?: { labels?: Record<string, string> } };
        counter.sawLabels(e.pod?.labels);
      } else if (t === 'del') counts.deleted++;
      else if (t === 'tick') counts.bookmarks++;
      else if (t === 'begin') inSnapshot = (JSON.parse(text) as { full?: boolean }).full === true;
      else if (t === 'synced') inSnapshot = false;
    };
    const tap = new Transform({
      transform(chunk: Buffer, _encoding, done) {
        counts.bytes = (counts.bytes ?? 0) + chunk.length; // inflated: the lines themselves
        const text = rest + decoder.write(chunk);
        let from = 0;
        for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', from)) {
          line(text.slice(from, nl));
          from = nl + 1;
        }
        rest = text.slice(from);
        done(null, chunk);
      },
    });
    // Destroying either end (the agent's stream on abort or silence) destroys the other.
    return pipeline(body, tap, () => undefined);
  };
}
