import { describe, expect, it } from 'vitest';
import {
  describeHostPort,
  hostPortsOverlap,
  parsePortMappings,
  servableHostPorts,
  type HostPort,
} from './port-mapping.js';

const lower = (ip: string) => ip.toLowerCase();
const parse = (portMappings: unknown) =>
  parsePortMappings({ runtimeConfig: { portMappings } }, lower);

describe('parsePortMappings', () => {
  it('reads what containerd sends: protocol in any case (absent: tcp), hostIP empty, 0.0.0.0, :: or one address', () => {
    expect(
      parse([
        { hostPort: 8080, containerPort: 80, protocol: 'TCP', hostIP: '' },
        { hostPort: 53, containerPort: 5353, protocol: 'udp', hostIP: '0.0.0.0' },
        { hostPort: 53, containerPort: 5353, protocol: 'udp', hostIP: '::' },
        { hostPort: 9000, containerPort: 9, protocol: 'SCTP', hostIP: '2001:DB8::1' },
        { hostPort: 81, containerPort: 81 },
      ]),
    ).toEqual({
      ok: true,
      value: [
        { protocol: 'tcp', hostPort: 8080, containerPort: 80 },
        { protocol: 'udp', hostPort: 53, containerPort: 5353, family: 4 },
        { protocol: 'udp', hostPort: 53, containerPort: 5353, family: 6 },
        { protocol: 'sctp', hostPort: 9000, containerPort: 9, hostIP: '2001:db8::1' },
        { protocol: 'tcp', hostPort: 81, containerPort: 81 },
      ],
    });
    expect(parsePortMappings({}, lower)).toEqual({ ok: true, value: [] });
  });

  it("reads containerd's field names too (go-cni marshals them capitalised: HostPort, ...)", () => {
    expect(
      parse([{ HostPort: 54323, ContainerPort: 8080, Protocol: 'TCP', HostIP: '::1' }]),
    ).toEqual({
      ok: true,
      value: [{ protocol: 'tcp', hostPort: 54323, containerPort: 8080, hostIP: '::1' }],
    });
    expect(parsePortMappings({ runtimeConfig: {} }, lower)).toEqual({ ok: true, value: [] });
  });

  it('refuses bad input with the field it is about', () => {
    const error = (m: unknown) => {
      const r = parse(m);
      return r.ok ? undefined : r.error;
    };
    expect(error([{ hostPort: 0, containerPort: 80 }])).toMatch(/portMappings\[0\]\[hostPort\]/);
    expect(error([{ hostPort: 80, containerPort: 70000 }])).toMatch(/containerPort/);
    expect(error([{ hostPort: 80, containerPort: 80, protocol: 'icmp' }])).toMatch(
      /protocol "icmp" is not tcp, udp or sctp/,
    );
    expect(error([{ hostPort: 80, containerPort: 80, hostIP: '10.0.0.300' }])).toMatch(
      /hostIP "10.0.0.300" is not an IP address/,
    );
    expect(error('nope')).toMatch(/portMappings/);
    expect(
      error(Array.from({ length: 1025 }, (_, i) => ({ hostPort: i + 1, containerPort: 1 }))),
    ).toMatch(/portMappings/);
    expect(
      error([
        { hostPort: 80, containerPort: 80 },
        { hostPort: 80, containerPort: 81, hostIP: '10.0.0.1' },
      ]),
    ).toBe('hostPort tcp 10.0.0.1:80 is asked twice, for container ports 80 and 81');
  });

  it('keeps one of a mapping asked twice alike', () => {
    const m = { hostPort: 80, containerPort: 80, protocol: 'tcp', hostIP: '' };
    expect(parse([m, m])).toEqual({
      ok: true,
      value: [{ protocol: 'tcp', hostPort: 80, containerPort: 80 }],
    });
  });
});

describe('hostPortsOverlap', () => {
  const m = (over: Partial<HostPort>): HostPort => ({
    protocol: 'tcp',
    hostPort: 80,
    containerPort: 80,
    ...over,
  });
  it('same port and protocol on a common address', () => {
    expect(hostPortsOverlap(m({}), m({ hostIP: '10.0.0.1' }))).toBe(true);
    expect(hostPortsOverlap(m({ hostIP: '10.0.0.1' }), m({ hostIP: '10.0.0.1' }))).toBe(true);
    expect(hostPortsOverlap(m({ family: 4 }), m({ hostIP: '10.0.0.1' }))).toBe(true);
    expect(hostPortsOverlap(m({ family: 6 }), m({ family: 6 }))).toBe(true);
  });
  it('no overlap: another protocol, port, address or family (the HostPort conformance spec)', () => {
    expect(hostPortsOverlap(m({}), m({ protocol: 'udp' }))).toBe(false);
    expect(hostPortsOverlap(m({}), m({ hostPort: 81 }))).toBe(false);
    expect(hostPortsOverlap(m({ hostIP: '10.0.0.1' }), m({ hostIP: '10.0.0.2' }))).toBe(false);
    expect(hostPortsOverlap(m({ family: 6 }), m({ hostIP: '10.0.0.1' }))).toBe(false);
    expect(hostPortsOverlap(m({ family: 4 }), m({ family: 6 }))).toBe(false);
  });
  it('describes a mapping as an address and port', () => {
    expect(describeHostPort(m({}))).toBe('tcp *:80');
    expect(describeHostPort(m({ family: 6, protocol: 'udp' }))).toBe('udp [::]:80');
    expect(describeHostPort(m({ hostIP: '2001:db8::1' }))).toBe('tcp [2001:db8::1]:80');
  });
});

describe('servableHostPorts', () => {
  const m = (over: Partial<HostPort>): HostPort => ({
    protocol: 'tcp',
    hostPort: 80,
    containerPort: 80,
    ...over,
  });
  it('a pod of both families: every mapping as it is', () => {
    const all = [m({}), m({ family: 4 }), m({ hostIP: '2001:db8::1', hostPort: 81 })];
    expect(servableHostPorts(all, [6, 4])).toEqual({ ok: true, value: all });
  });

  it('a pod of one family: a mapping on every node address is kept for that family only', () => {
    expect(servableHostPorts([m({}), m({ family: 6, hostPort: 81 })], [6])).toEqual({
      ok: true,
      value: [m({ family: 6 }), m({ family: 6, hostPort: 81 })],
    });
    // `*:80` and `[::]:80` to the same container port are one mapping once narrowed.
    expect(servableHostPorts([m({}), m({ family: 6 })], [6])).toEqual({
      ok: true,
      value: [m({ family: 6 })],
    });
  });

  it('refuses a mapping bound to a family the pod has no address in, naming it', () => {
    expect(servableHostPorts([m({ hostIP: '192.0.2.1' })], [6])).toEqual({
      ok: false,
      error:
        'hostPort tcp 192.0.2.1:80 cannot reach the pod: the pod has no IPv4 address (a hostPort is DNATed within its family)',
    });
    expect(servableHostPorts([m({}), m({ family: 4, protocol: 'udp' })], [6])).toMatchObject({
      ok: false,
      error: expect.stringMatching(
        /^hostPort udp 0\.0\.0\.0:80 cannot reach the pod: the pod has no IPv4 address/,
      ),
    });
    expect(servableHostPorts([m({ hostIP: '2001:db8::1' })], [4])).toMatchObject({
      ok: false,
      error: expect.stringContaining('no IPv6 address'),
    });
    expect(servableHostPorts([m({})], [])).toMatchObject({ ok: false });
  });
});
