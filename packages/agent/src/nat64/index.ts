// NAT64 on the node: Tayga supervised by the agent, following the NodeConfig's spec.nat64.
import type { Logger, NodeConfigSpec } from '@flock/api';
import type { Nat64Translator } from './translator.js';

export * from './tayga.js';
export * from './translator.js';
export * from './edge.js';

/**
 * The translator as an agent part: it converges on start and on every NodeConfig change (a
 * no-op unless spec.nat64 changed), and stops with the agent.
 */
export function nat64Part(
  translator: Nat64Translator,
  current: () => NodeConfigSpec | undefined,
  logger: Logger,
) {
  const converge = (spec: NodeConfigSpec | undefined) =>
    translator
      .converge(spec?.nat64)
      .catch((e: unknown) =>
        logger.debug('NAT64 translator: converge failed (retried)', { error: String(e) }),
      );
  return {
    onNodeConfig: (nc: { spec: NodeConfigSpec } | undefined) => void converge(nc?.spec),
    component: {
      name: 'NAT64 translator',
      start: () => converge(current()),
      stop: () => translator.stop(),
    },
  };
}
