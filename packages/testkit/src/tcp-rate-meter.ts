// A TCP rate meter (tcp-rate.ts runs it), run with `node tcp-rate-meter.ts ...` inside a network
// namespace (Node strips the types; only node: imports). The receiver measures: what a shaper
// lets through is what arrives, not what the sender's socket buffers took.
//   sink PORT WARMUP_MS MEASURE_MS  accept one connection on [::]:PORT ("ready" once listening);
//                                   WARMUP_MS after its first byte (slow start, a shaper's
//                                   burst), count the bytes of the next MEASURE_MS, print
//                                   {"bytes":N,"ms":M} and close the connection
//   send HOST PORT                  connect and write as fast as the connection takes, until
//                                   the sink closes it
import { connect, createServer } from 'node:net';

const [mode, ...args] = process.argv.slice(2);

function sink(port: number, warmupMs: number, measureMs: number): void {
  const server = createServer((sock) => {
    server.close();
    let total = 0;
    let first: number | undefined;
    let start: { at: number; bytes: number } | undefined;
    sock.on('error', () => process.exit(1));
    sock.on('data', (d: Buffer) => {
      total += d.length;
      const now = performance.now();
      first ??= now;
      if (!start && now - first >= warmupMs) start = { at: now, bytes: total };
      if (start && now - start.at >= measureMs) {
        process.stdout.write(
          `${JSON.stringify({ bytes: total - start.bytes, ms: now - start.at })}\n`,
        );
        sock.destroy();
      }
    });
  });
  server.listen(port, '::', () => process.stdout.write('ready\n'));
}

function send(host: string, port: number): void {
  const chunk = Buffer.alloc(64 * 1024, 0x61);
  const sock = connect({ host, port });
  const pump = () => {
    while (!sock.destroyed && sock.write(chunk));
  };
  sock.on('connect', pump);
  sock.on('drain', pump);
  sock.on('error', () => undefined); // the sink's close resets the connection: that is the end
  sock.on('close', () => process.exit(0));
}

if (mode === 'sink') sink(Number(args[0]), Number(args[1]), Number(args[2]));
else if (mode === 'send') send(args[0]!, Number(args[1]));
else {
  process.stderr.write(
    'usage: tcp-rate-meter.ts sink PORT WARMUP_MS MEASURE_MS | send HOST PORT\n',
  );
  process.exit(2);
}
