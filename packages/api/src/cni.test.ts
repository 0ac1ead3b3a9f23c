import { describe, expect, it } from 'vitest';
import { AgentRequest, ContainerId, IfName, NetnsPath, parseCniArgs } from './cni.js';

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
});
