// The cluster the translate unit tests share: namespaces x, y, z, four pods, three of them local.
import type { LocalPodIR, NetpolIR, RuleIR } from '../src/ir.js';
import { parseState } from '../src/state.js';
import { local, namespace, pod, state } from './builders.js';
import { translate } from '../src/translate.js';

export const namespaces = [
  namespace('x', { team: 'blue' }),
  namespace('y', { team: 'red' }),
  namespace('z'),
];
export const pods = [
  pod(
    'x/a',
    { app: 'a' },
    ['10.0.1.1', 'fd00::1:1'],
    [
      { name: 'http', port: 8080 },
      { name: 'dns', port: 53, protocol: 'UDP' },
    ],
  ),
  pod('x/b', { app: 'b', tier: 'db' }, ['10.0.1.2', 'fd00::1:2'], [{ name: 'http', port: 9090 }]),
  pod('y/a', { app: 'a' }, ['10.0.2.1', 'fd00::2:1']),
  pod('z/c', { app: 'c' }, ['10.0.3.1'], [{ name: 'http', port: 80 }]),
];
export const locals = [local('x/a', 'fl-a'), local('x/b', 'fl-b'), local('y/a', 'fl-ya')];

export function tr(
  policies: unknown[],
  extra: {
    pods?: unknown[];
    local?: unknown[];
    clusterPolicies?: unknown[];
    nodes?: unknown[];
  } = {},
): NetpolIR {
  return translate(
    parseState(
      state({
        namespaces,
        pods: [...pods, ...(extra.pods ?? [])],
        policies,
        clusterPolicies: extra.clusterPolicies ?? [],
        nodes: extra.nodes ?? [],
        local: extra.local ?? locals,
      }),
    ),
  );
}
export const podOf = (ir: NetpolIR, ref: string): LocalPodIR => {
  const found = ir.pods.find((p) => p.pod === ref);
  if (!found) throw new Error(`no local pod ${ref}`);
  return found;
};
export const peers = (ir: NetpolIR, name: string | undefined) => {
  const s = ir.addressSets.find((a) => a.name === name);
  return s ? { v4: s.v4, v6: s.v6 } : undefined;
};
export const ports = (ir: NetpolIR, name: string | undefined) =>
  ir.portSets.find((p) => p.name === name);
export const allow = (rule: RuleIR | undefined) => (rule?.kind === 'allow' ? rule : undefined);
