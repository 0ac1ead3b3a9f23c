// One benchmark watcher: a process that runs one agent's watches (a design's, designs.ts) as
// node NODE against the API server and answers the benchmark over IPC (protocol.ts).
//   node watcher.js --kubeconfig PATH --node NAME --design NAME    (spawned by watchers.ts)
//     [--relay-ca PATH --relay-token PATH]      (a design with a peer relay: its CA, the token)
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { HttpTransport, createLogger, loadKubeConfig } from '@flock/kube';
import { loadAgentConfig } from '../../src/core/config.js';
import { CountingTransport } from './counting-transport.js';
import { designNamed, type Watches } from './designs.js';
import type { Command, Reply } from './protocol.js';

const { values } = parseArgs({
  strict: true,
  options: {
    kubeconfig: { type: 'string' },
    node: { type: 'string' },
    design: { type: 'string' },
    'relay-ca': { type: 'string' },
    'relay-token': { type: 'string' },
  },
});
const { kubeconfig, node, design } = values;
const caFile = values['relay-ca'];
const tokenFile = values['relay-token'];
const relay = caFile && tokenFile ? { caFile, tokenFile } : undefined;
if (!kubeconfig || !node || !design || !process.send)
  throw new Error(
    'watcher.js is started by the fan-out benchmark (--kubeconfig, --node, --design, IPC)',
  );

const send = (reply: Reply) => process.send?.(reply);
// Errors only: a hundred watchers repeating the same start-up lines help nobody.
const logger = createLogger(`bench-watcher ${node}`, 'error');
const config = loadAgentConfig(['--node-name', node, '--kubeconfig', kubeconfig], {});
const transport = new CountingTransport(new HttpTransport(loadKubeConfig(kubeconfig)));
const arm = designNamed(design);
let watches: Watches | undefined;

process.on('message', (command: Command) => {
  if (command.type === 'start' && !watches) {
    const t0 = performance.now();
    watches = arm.start(transport, config, logger, relay);
    watches.synced.then(
      () => send({ type: 'synced', ms: performance.now() - t0 }),
      (error: unknown) => send({ type: 'failed', error: String(error) }),
    );
  } else if (command.type === 'report') {
    const cpu = process.cpuUsage();
    send({
      type: 'report',
      counts: Object.fromEntries(transport.counts),
      lags: transport.drainLags(),
      cpuMs: (cpu.user + cpu.system) / 1000,
    });
  } else if (command.type === 'stop') {
    void (watches?.stop() ?? Promise.resolve()).finally(() => process.disconnect());
  }
});
// The benchmark went away (or said stop): nothing keeps this process.
process.on('disconnect', () => process.exit(0));
send({ type: 'ready' });
