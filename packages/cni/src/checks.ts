// The plugin's checks of what crosses its boundaries: the agent request it builds from the
// environment and stdin, and the agent's reply. The same rules as the zod schemas of
// @flock/api (parseAgentRequest, FlockNetConf, AgentResponse), written out by hand because zod
// costs the plugin ~5 ms (zod/mini) to ~25 ms (zod) of start-up per pod. checks.property.test.ts
// proves they accept, refuse and return exactly what the schemas do.
import {
  AGENT_COMMANDS,
  CNI_ARG_KEY_MAX,
  CNI_ARG_VALUE_MAX,
  TIMEOUT_MS_MAX,
  TIMEOUT_MS_MIN,
  containerIdProblem,
  ifNameProblem,
  missingFields,
  netnsProblem,
  type AgentRequest,
  type AgentResponse,
  type CniResult,
  type FieldProblem,
} from '@flock/api';

type Path = readonly PropertyKey[];
type Obj = Record<string, unknown>;

const isObject = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Collects problems; each check returns whether the value passed. */
class Problems {
  readonly list: FieldProblem[] = [];
  add(path: Path, problem: string): false {
    this.list.push({ path, problem });
    return false;
  }
  object(v: unknown, path: Path): v is Obj {
    return isObject(v) || this.add(path, 'expected object');
  }
  string(v: unknown, path: Path): v is string {
    return typeof v === 'string' || this.add(path, 'expected string');
  }
  int(v: unknown, path: Path, min?: number, max?: number): v is number {
    if (typeof v !== 'number' || Number.isNaN(v) || !Number.isFinite(v))
      return this.add(path, 'expected number');
    if (!Number.isInteger(v)) return this.add(path, 'expected integer');
    if (!Number.isSafeInteger(v))
      return this.add(path, `must be at most ${Number.MAX_SAFE_INTEGER}`);
    if (min !== undefined && v < min) return this.add(path, `must be at least ${min}`);
    if (max !== undefined && v > max) return this.add(path, `must be at most ${max}`);
    return true;
  }
  ruled(v: unknown, path: Path, problem: (s: string) => string | undefined): v is string {
    if (!this.string(v, path)) return false;
    const p = problem(v);
    return p === undefined || this.add(path, p);
  }
  /** An optional field: absent (or undefined) passes, anything else must pass `check`. */
  optional(o: Obj, key: string, check: (v: unknown, path: Path) => boolean, path: Path): void {
    if (o[key] !== undefined) check(o[key], [...path, key]);
  }
}

/** FlockNetConf's rules. */
function checkConfig(p: Problems, config: unknown, path: Path): void {
  if (!p.object(config, path)) return;
  p.string(config['cniVersion'], [...path, 'cniVersion']);
  const name = config['name'];
  if (p.string(name, [...path, 'name']) && name.length < 1)
    p.add([...path, 'name'], 'must be at least 1');
  if (config['type'] !== 'flock') p.add([...path, 'type'], 'expected "flock"');
  p.optional(
    config,
    'socketPath',
    (v, at) => p.string(v, at) && (v.startsWith('/') || p.add(at, 'must start with "/"')),
    path,
  );
  p.optional(config, 'timeoutMs', (v, at) => p.int(v, at, TIMEOUT_MS_MIN, TIMEOUT_MS_MAX), path);
  p.optional(config, 'prevResult', (v, at) => p.object(v, at), path);
  p.optional(
    config,
    'cni.dev/valid-attachments',
    (v, at) => {
      if (!Array.isArray(v)) return p.add(at, 'expected array');
      v.forEach((a: unknown, i) => {
        if (!p.object(a, [...at, i])) return;
        p.string(a['containerID'], [...at, i, 'containerID']);
        p.string(a['ifname'], [...at, i, 'ifname']);
      });
      return true;
    },
    path,
  );
}

/** Every problem parseAgentRequest would report, by field (the order may differ). */
export function requestProblems(request: unknown): FieldProblem[] {
  const p = new Problems();
  if (!p.object(request, [])) return p.list;
  const command = request['command'];
  const known = (AGENT_COMMANDS as readonly unknown[]).includes(command);
  if (!known) p.add(['command'], `expected ${AGENT_COMMANDS.map((c) => `"${c}"`).join(' or ')}`);
  p.optional(request, 'containerID', (v, at) => p.ruled(v, at, containerIdProblem), []);
  p.optional(request, 'netns', (v, at) => p.ruled(v, at, netnsProblem), []);
  p.optional(request, 'ifName', (v, at) => p.ruled(v, at, ifNameProblem), []);
  p.optional(
    request,
    'args',
    (v, at) => {
      if (!p.object(v, at)) return false;
      for (const [key, value] of Object.entries(v)) {
        if (key.length > CNI_ARG_KEY_MAX)
          p.add([...at, key], `key must be at most ${CNI_ARG_KEY_MAX}`);
        if (p.string(value, [...at, key]) && value.length > CNI_ARG_VALUE_MAX)
          p.add([...at, key], `must be at most ${CNI_ARG_VALUE_MAX}`);
      }
      return true;
    },
    [],
  );
  checkConfig(p, request['config'], ['config']);
  return [...p.list, ...missingFields(request)];
}

/** The request as AgentRequest.parse returns it (args defaulted), when it has no problems. */
export function asAgentRequest(request: Obj): AgentRequest {
  return { ...request, args: request['args'] ?? {} } as AgentRequest;
}

/** Copy `keys` of `o` that are present (not undefined): z.object drops the others. */
function pick(o: Obj, keys: readonly string[]): Obj {
  const out: Obj = {};
  for (const k of keys) if (o[k] !== undefined) out[k] = o[k];
  return out;
}

function checkList(
  p: Problems,
  o: Obj,
  key: string,
  path: Path,
  item: (v: Obj, at: Path) => void,
): void {
  p.optional(
    o,
    key,
    (v, at) => {
      if (!Array.isArray(v)) return p.add(at, 'expected array');
      v.forEach((e: unknown, i) => p.object(e, [...at, i]) && item(e, [...at, i]));
      return true;
    },
    path,
  );
}

/** CniResult's rules; returns the result as CniResult.parse would (unknown keys dropped). */
function checkResult(p: Problems, r: unknown, path: Path): CniResult | undefined {
  if (!p.object(r, path)) return undefined;
  const before = p.list.length;
  p.string(r['cniVersion'], [...path, 'cniVersion']);
  checkList(p, r, 'interfaces', path, (i, at) => {
    p.string(i['name'], [...at, 'name']);
    p.optional(i, 'mac', (v, a) => p.string(v, a), at);
    p.optional(i, 'mtu', (v, a) => p.int(v, a), at);
    p.optional(i, 'sandbox', (v, a) => p.string(v, a), at);
  });
  checkList(p, r, 'ips', path, (ip, at) => {
    p.string(ip['address'], [...at, 'address']);
    p.optional(ip, 'gateway', (v, a) => p.string(v, a), at);
    p.optional(ip, 'interface', (v, a) => p.int(v, a, 0), at);
  });
  checkList(p, r, 'routes', path, (route, at) => {
    p.string(route['dst'], [...at, 'dst']);
    p.optional(route, 'gw', (v, a) => p.string(v, a), at);
  });
  p.optional(r, 'dns', (v, at) => p.object(v, at), path);
  if (p.list.length > before) return undefined;
  const out = pick(r, ['cniVersion']);
  const list = (key: string, keys: string[]) => {
    if (Array.isArray(r[key])) out[key] = (r[key] as Obj[]).map((e) => pick(e, keys));
  };
  list('interfaces', ['name', 'mac', 'mtu', 'sandbox']);
  list('ips', ['address', 'gateway', 'interface']);
  list('routes', ['dst', 'gw']);
  if (isObject(r['dns'])) out['dns'] = { ...r['dns'] };
  return out as CniResult;
}

/** AgentResponse's rules: the reply as AgentResponse.parse returns it, or its problems. */
export function parseReply(
  reply: unknown,
): { response: AgentResponse } | { problems: FieldProblem[] } {
  const p = new Problems();
  if (!p.object(reply, [])) return { problems: p.list };
  if (reply['ok'] === true) {
    if (reply['result'] === undefined) return { response: { ok: true } };
    const result = checkResult(p, reply['result'], ['result']);
    return result ? { response: { ok: true, result } } : { problems: p.list };
  }
  if (reply['ok'] === false) {
    const e = reply['error'];
    if (!p.object(e, ['error'])) return { problems: p.list };
    p.int(e['code'], ['error', 'code'], 1);
    p.string(e['msg'], ['error', 'msg']);
    p.optional(e, 'details', (v, at) => p.string(v, at), ['error']);
    if (p.list.length > 0) return { problems: p.list };
    return { response: { ok: false, error: pick(e, ['code', 'msg', 'details']) } as AgentResponse };
  }
  p.add(['ok'], 'matches none of the allowed forms');
  return { problems: p.list };
}
