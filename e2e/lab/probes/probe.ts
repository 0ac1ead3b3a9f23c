// A TCP probe run inside a namespace (the router's, for reachability checks): connects to
// ADDRESS PORT, asks GET /hostname (agnhost netexec answers the pod's name) and prints the
// reply; exit 1 when nothing answers.
//   node probe.js ADDRESS PORT [TIMEOUT_MS]
import { isIP } from 'node:net';
import { askHostname } from './ask-hostname.js';

const [host, portText, timeoutText] = process.argv.slice(2);
if (!host || isIP(host) === 0 || !/^\d{1,5}$/.test(portText ?? ''))
  throw new Error('usage: probe.js ADDRESS PORT [TIMEOUT_MS]');
const answer = await askHostname(host, Number(portText), Number(timeoutText ?? 3000));
if (answer.ok) process.stdout.write(answer.reply);
else process.stderr.write(`[${host}]:${portText}: ${answer.error}\n`);
process.exit(answer.ok ? 0 : 1);
