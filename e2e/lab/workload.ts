// The lab's workload, started by the kubelet stand-in inside a pod's network namespace: answers
// on every port the pod declares — TCP with a one-line HTTP reply naming the pod, UDP by echo.
// Prints "ready" once every port listens.
//   node workload.js POD_NAMESPACE/POD_NAME [tcp:PORT | udp:PORT]...
import { createSocket } from 'node:dgram';
import { createServer } from 'node:net';

const [pod, ...ports] = process.argv.slice(2);
if (!pod || !/^[a-z0-9.-]+\/[a-z0-9.-]+$/.test(pod)) throw new Error(`bad pod name ${pod}`);

const listening: Promise<void>[] = [];
for (const spec of ports) {
  const m = /^(tcp|udp):(\d{1,5})$/.exec(spec);
  if (!m) throw new Error(`bad port ${spec}: tcp:PORT or udp:PORT`);
  const port = Number(m[2]);
  if (m[1] === 'tcp') {
    const server = createServer((socket) => {
      socket.once('data', () =>
        socket.end(`HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\npod ${pod}\n`),
      );
      socket.on('error', () => socket.destroy());
    });
    listening.push(new Promise((resolve) => server.listen({ port, host: '::' }, resolve)));
  } else {
    const udp = createSocket({ type: 'udp6', ipv6Only: false });
    udp.on('message', (msg, from) => udp.send(msg, from.port, from.address));
    listening.push(new Promise((resolve) => udp.bind(port, '::', resolve)));
  }
}
await Promise.all(listening);
process.stdout.write('ready\n');
// Stay up even when the pod declares no port.
setInterval(() => undefined, 1 << 30);
