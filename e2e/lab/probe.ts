// A TCP probe run inside a namespace (the router's, for reachability checks): connects to
// ADDRESS PORT, asks GET /hostname (agnhost netexec answers the pod's name) and prints the
// reply; exit 1 when nothing answers.
//   node probe.js ADDRESS PORT [TIMEOUT_MS]
import { isIP, connect } from 'node:net';

const [host, portText, timeoutText] = process.argv.slice(2);
if (!host || isIP(host) === 0 || !/^\d{1,5}$/.test(portText ?? ''))
  throw new Error('usage: probe.js ADDRESS PORT [TIMEOUT_MS]');
const socket = connect({ host, port: Number(portText), timeout: Number(timeoutText ?? 3000) });
let reply = '';
socket.on('connect', () => socket.write('GET /hostname HTTP/1.0\r\n\r\n'));
socket.on('data', (d) => (reply += d.toString()));
socket.on('timeout', () => {
  process.stderr.write(`timeout connecting to [${host}]:${portText}\n`);
  process.exit(1);
});
socket.on('error', (e) => {
  process.stderr.write(`${e.message}\n`);
  process.exit(1);
});
socket.on('end', () => {
  process.stdout.write(reply);
  process.exit(reply ? 0 : 1);
});
