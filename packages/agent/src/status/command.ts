// `flock-agent status`: ask the running agent over its status socket (run it with
// `kubectl exec` in the agent container, as root), validate the answer, print it as text or
// JSON. Exit 0 when the agent answered, 1 when it did not or the answer is invalid, 2 on bad flags.
import { request } from 'node:http';
import { parseArgs } from 'node:util';
import { DEFAULT_AGENT_SOCKET } from '@flock/api';
import { formatStatus } from './format.js';
import { STATUS_PATH, statusSocketPath } from './server.js';
import { AgentStatus } from './snapshot.js';

const USAGE = `usage: flock-agent status [--output text|json] [--status-socket PATH] [--socket PATH]

  -o, --output         text (default) or json
      --status-socket  the agent's status socket (default: status.sock beside --socket)
      --socket         the agent's CNI socket (default ${DEFAULT_AGENT_SOCKET})
`;

interface Out {
  stdout: { write(s: string): unknown };
  stderr: { write(s: string): unknown };
}

/** GET /status over the unix socket; resolves with the body of a 200 answer. */
export function fetchStatus(socketPath: string, timeoutMs = 10_000): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = request(
      { socketPath, path: STATUS_PATH, method: 'GET', timeout: timeoutMs },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          if (res.statusCode !== 200)
            return reject(new Error(`the agent answered ${res.statusCode}: ${text.trim()}`));
          try {
            resolve(JSON.parse(text));
          } catch {
            reject(new Error('the agent answered something that is not JSON'));
          }
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer in ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

export async function statusCommand(argv: string[], out: Out = process): Promise<number> {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        output: { type: 'string', short: 'o', default: 'text' },
        'status-socket': { type: 'string' },
        socket: { type: 'string', default: DEFAULT_AGENT_SOCKET },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
    }));
  } catch (error) {
    out.stderr.write(`flock-agent status: ${(error as Error).message}\n${USAGE}`);
    return 2;
  }
  if (values.help) {
    out.stdout.write(USAGE);
    return 0;
  }
  if (values.output !== 'text' && values.output !== 'json') {
    out.stderr.write(`flock-agent status: --output must be text or json\n${USAGE}`);
    return 2;
  }
  const socketPath = statusSocketPath({
    socketPath: values.socket,
    ...(values['status-socket'] ? { statusSocketPath: values['status-socket'] } : {}),
  });
  let status: AgentStatus;
  try {
    const parsed = AgentStatus.safeParse(await fetchStatus(socketPath));
    if (!parsed.success)
      throw new Error(`the agent's answer is not a status: ${parsed.error.issues[0]?.message}`);
    status = parsed.data;
  } catch (error) {
    out.stderr.write(`flock-agent status: ${socketPath}: ${(error as Error).message}\n`);
    return 1;
  }
  out.stdout.write(
    values.output === 'json' ? `${JSON.stringify(status, null, 2)}\n` : formatStatus(status),
  );
  return 0;
}
