import { describe, expect, it } from 'vitest';
import {
  AgentRequest,
  ContainerId,
  FlockNetConf,
  IfName,
  NetnsPath,
  describeIssues,
  flockConflist,
  parseAgentRequest,
  parseCniArgs,
} from './cni.js';

describe('CNI boundary grammar', () => {
  it('parses CNI_ARGS and refuses malformed pairs', () => {
    expect(parseCniArgs('K8S_POD_NAMESPACE=ns;K8S_POD_NAME=p;IgnoreUnknown=1')).toEqual({
      K8S_POD_NAMESPACE: 'ns',
      K8S_POD_NAME: 'p',
      IgnoreUnknown: '1',
    });
    expect(parseCniArgs('')).toEqual({});
    expect(parseCniArgs(undefined)).toEqual({});
    expect(parseCniArgs('novalue')).toBeUndefined();
    expect(parseCniArgs('=x')).toBeUndefined();
  });

  it('refuses names that could escape into paths or commands', () => {
    expect(ContainerId.safeParse('0123abcd').success).toBe(true);
    for (const bad of ['', '-x', '../etc', 'a b', 'a;reboot', 'a/b'])
      expect(ContainerId.safeParse(bad).success).toBe(false);
    expect(IfName.safeParse('eth0').success).toBe(true);
    for (const bad of ['', 'a'.repeat(16), 'eth 0', 'eth0:1', 'a/b', '..', '$(x)'])
      expect(IfName.safeParse(bad).success).toBe(false);
    expect(NetnsPath.safeParse('/var/run/netns/cni-1234').success).toBe(true);
    for (const bad of ['relative', '/proc/../etc', '/a b', '/x;y'])
      expect(NetnsPath.safeParse(bad).success).toBe(false);
  });

  it('validates agent requests', () => {
    const ok = AgentRequest.safeParse({
      command: 'ADD',
      containerID: 'abc',
      netns: '/run/netns/x',
      ifName: 'eth0',
      config: { cniVersion: '1.1.0', name: 'flock', type: 'flock' },
    });
    expect(ok.success).toBe(true);
    expect(AgentRequest.safeParse({ command: 'VERSION', config: {} }).success).toBe(false);
  });

  it('requires the container fields each command needs', () => {
    const config = { cniVersion: '1.1.0', name: 'flock', type: 'flock' };
    const missing = (req: object) => {
      const r = parseAgentRequest(req);
      return r.success ? [] : r.problems.map((p) => `${String(p.path[0])}: ${p.problem}`);
    };
    expect(missing({ command: 'ADD', containerID: 'a', config })).toEqual([
      'netns: required for ADD',
      'ifName: required for ADD',
    ]);
    expect(missing({ command: 'DEL', containerID: 'a', ifName: 'eth0', config })).toEqual([]);
    expect(missing({ command: 'GC', config })).toEqual([]);
  });

  it('describes issues by field, the same with zod/mini and its bare messages', () => {
    const r = FlockNetConf.safeParse({
      cniVersion: 1,
      name: '',
      type: 'bridge',
      timeoutMs: 99,
      'cni.dev/valid-attachments': [{ containerID: 'a' }],
    });
    expect(r.success).toBe(false);
    expect(describeIssues(r.error?.issues ?? [], 'config', 10).message).toBe(
      [
        'config.cniVersion: expected string',
        'config.name: must be at least 1',
        'config.type: expected "flock"',
        'config.timeoutMs: must be at least 100',
        'config["cni.dev/valid-attachments"][0].ifname: expected string',
      ].join('; '),
    );
    const few = describeIssues(r.error?.issues ?? [], '', 2);
    expect(few.fields).toEqual(['cniVersion', 'name']);
    expect(few.message).toMatch(/\(3 more\)$/);
  });
});

describe('flockConflist', () => {
  it('defaults to the shipped conflist: every version flock speaks, the default socket', () => {
    expect(flockConflist()).toEqual({
      cniVersion: '1.1.0',
      cniVersions: ['0.4.0', '1.0.0', '1.1.0'],
      name: 'flock',
      plugins: [
        {
          type: 'flock',
          socketPath: '/run/flock/cni.sock',
          timeoutMs: 60_000,
          capabilities: { portMappings: true },
        },
      ],
    });
  });

  it('takes a socket, a timeout, a name, one pinned version and plugins after flock', () => {
    const portmap = { type: 'portmap', capabilities: { portMappings: true } };
    expect(
      flockConflist({
        name: 'n',
        socketPath: '/tmp/x/cni.sock',
        timeoutMs: 10_000,
        cniVersion: '0.4.0',
        chained: [portmap],
      }),
    ).toEqual({
      cniVersion: '0.4.0',
      name: 'n',
      plugins: [
        {
          type: 'flock',
          socketPath: '/tmp/x/cni.sock',
          timeoutMs: 10_000,
          capabilities: { portMappings: true },
        },
        portmap,
      ],
    });
  });

  it("refuses what the agent would refuse in flock's entry", () => {
    expect(() => flockConflist({ socketPath: 'run/cni.sock' })).toThrow();
    expect(() => flockConflist({ timeoutMs: 99 })).toThrow();
    expect(() => flockConflist({ name: '' })).toThrow();
  });
});
