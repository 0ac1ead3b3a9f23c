// The kernel tier's cluster: namespaces x, y, z with pods a, b, c each on this node (9 local
// pods), a pod x/r on another node (known by its IPs only) and an external host "ext".
// Every pod serves TCP and UDP on 80 and 81, declared as named ports the way the Kubernetes
// e2e tests name them, plus "web" which means 80 on pods a, 81 on pods b and r, and nothing on c.
import type { PortDecl } from './builders.js';
import type { Endpoint } from './lab.js';

export const NAMESPACE_LABELS: Record<string, Record<string, string>> = {
  x: { ns: 'x', team: 'blue' },
  y: { ns: 'y', team: 'red' },
  z: { ns: 'z' },
};

const SERVE: PortDecl[] = [
  { name: 'serve-80-tcp', port: 80 },
  { name: 'serve-81-tcp', port: 81 },
  { name: 'serve-80-udp', port: 80, protocol: 'UDP' },
  { name: 'serve-81-udp', port: 81, protocol: 'UDP' },
];
const WEB: Record<string, number> = { a: 80, b: 81, r: 81 };

function podEndpoint(
  ns: string,
  nsIndex: number,
  name: string,
  host: number,
  local: boolean,
): Endpoint {
  const web = WEB[name];
  return {
    ref: `${ns}/${name}`,
    kind: 'pod',
    local,
    ns,
    pod: name,
    labels: { pod: name },
    v4: `10.${nsIndex}.${local ? 0 : 9}.${host}`,
    v6: `fd00:${nsIndex}::${local ? '' : '9:'}${host}`,
    ports: [...SERVE, ...(web ? [{ name: 'web', port: web }] : [])],
  };
}

export function topology(): Endpoint[] {
  const pods = ['x', 'y', 'z'].flatMap((ns, i) =>
    ['a', 'b', 'c'].map((name, j) => podEndpoint(ns, i + 1, name, j + 1, true)),
  );
  return [
    ...pods,
    podEndpoint('x', 1, 'r', 1, false),
    { ref: 'ext', kind: 'external', local: false, v4: '203.0.113.10', v6: '2001:db8:e::10' },
  ];
}
