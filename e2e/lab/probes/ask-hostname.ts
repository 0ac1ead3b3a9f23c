// One GET /hostname over a new TCP connection (agnhost netexec answers the pod's name): the
// client the lab's in-namespace scripts (probe.ts, prober.ts, reach.ts) share.
import { connect } from 'node:net';

export type HostnameAnswer = { ok: true; reply: string } | { ok: false; error: string };

/** Connects to HOST PORT, asks GET /hostname and resolves with the whole reply (never rejects). */
export function askHostname(
  host: string,
  port: number,
  timeoutMs: number,
): Promise<HostnameAnswer> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    let reply = '';
    const done = (answer: HostnameAnswer) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    // Where it stopped (handshake or reply) and the flow (local port), to find it in a capture.
    let connected = false;
    const timer = setTimeout(() => {
      const stage = connected ? 'connected, no reply' : 'not connected';
      const from = socket.localPort === undefined ? '' : `, from port ${socket.localPort}`;
      done({ ok: false, error: `no answer within ${timeoutMs} ms (${stage}${from})` });
    }, timeoutMs);
    socket.on('connect', () => {
      connected = true;
      socket.write('GET /hostname HTTP/1.0\r\n\r\n');
    });
    socket.on('data', (d: Buffer) => (reply += d.toString()));
    socket.on('error', (e) => done({ ok: false, error: e.message }));
    socket.on('end', () => done(reply ? { ok: true, reply } : { ok: false, error: 'empty reply' }));
  });
}
