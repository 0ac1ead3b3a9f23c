// A local pod's hostPorts as the elements of flock's DNAT maps: `address . protocol . port :
// pod address . container port` for one node address, `protocol . port : ...` for every node
// address of a family. The pod's own first address of each family is the target (never an
// anycast one); a mapping of a family the pod has no address of is left out.
import { ipFamily, ipToBigInt, type Family, type HostPort } from '@flock/api';
import { formatAddress } from './addresses.js';
import type { HostPortsIR } from './ir.js';

export function hostPortElements(
  mappings: readonly HostPort[],
  pod: { family: Family; n: bigint }[],
): HostPortsIR | undefined {
  if (mappings.length === 0) return undefined;
  const target = (f: Family) => {
    const a = pod.find((x) => x.family === f);
    return a && formatAddress(a.n, f);
  };
  const out: HostPortsIR = { v4: [], v6: [], anyV4: [], anyV6: [] };
  for (const m of mappings) {
    const families: Family[] =
      m.hostIP !== undefined ? [ipFamily(m.hostIP) as Family] : m.family ? [m.family] : [4, 6];
    for (const f of families) {
      const to = target(f);
      if (!to) continue;
      const data = `${to} . ${m.containerPort}`;
      const key = `${m.protocol} . ${m.hostPort}`;
      if (m.hostIP !== undefined)
        (f === 4 ? out.v4 : out.v6).push(
          `${formatAddress(ipToBigInt(m.hostIP), f)} . ${key} : ${data}`,
        );
      else (f === 4 ? out.anyV4 : out.anyV6).push(`${key} : ${data}`);
    }
  }
  return out;
}
