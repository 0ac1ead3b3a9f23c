// The node's Tayga translators, supervised by the agent and following its NodeConfig: NAT64
// (spec.nat64) and the inter-node translation of a Private pool's IPv4 (spec.ipv4).
import type { Logger, NodeConfigSpec } from '@flock/api';
import type { InterNodeTranslator } from './siit.js';
import { interNodeOf } from './siit.js';
import type { Nat64Translator } from './tayga.js';
import type { TaygaTranslator } from './translator.js';

export * from './tayga.js';
export * from './siit.js';
export * from './translator.js';
export * from './edge.js';

/**
 * A translator as an agent part: it converges on start and on every NodeConfig change (a no-op
 * unless what `want` picks of the spec changed), and stops with the agent.
 */
export function translatorPart<T>(
  name: string,
  translator: TaygaTranslator<T>,
  want: (spec: NodeConfigSpec | undefined) => T | undefined,
  current: () => NodeConfigSpec | undefined,
  logger: Logger,
) {
  const converge = (spec: NodeConfigSpec | undefined) =>
    translator
      .converge(want(spec))
      .catch((e: unknown) =>
        logger.debug(`${name} translator: converge failed (retried)`, { error: String(e) }),
      );
  return {
    onNodeConfig: (nc: { spec: NodeConfigSpec } | undefined) => void converge(nc?.spec),
    component: {
      name: `${name} translator`,
      start: () => converge(current()),
      stop: () => translator.stop(),
    },
  };
}

/** The node's translators as agent parts: NodeConfig listeners and components (absent ones none). */
export function translatorParts(
  translators: { nat64?: Nat64Translator | undefined; interNode?: InterNodeTranslator | undefined },
  current: () => NodeConfigSpec | undefined,
  logger: Logger,
) {
  const parts = [
    ...(translators.nat64
      ? [translatorPart('NAT64', translators.nat64, (s) => s?.nat64, current, logger)]
      : []),
    ...(translators.interNode
      ? [translatorPart('inter-node IPv4', translators.interNode, interNodeOf, current, logger)]
      : []),
  ];
  return {
    listeners: parts.map((p) => p.onNodeConfig),
    components: parts.map((p) => p.component),
  };
}
