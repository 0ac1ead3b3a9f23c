// The node's Tayga translators, supervised by the agent and following its NodeConfig: NAT64
// (spec.nat64) and the inter-node translation of a Private pool's IPv4 (spec.ipv4).
import type { Logger, NodeConfigSpec } from '@flock/api';
import { Loop } from '@flock/kube';
import { interNodeOf, type InterNodeTranslator } from './siit.js';
import type { Nat64Translator } from './tayga.js';
import type { TaygaTranslator } from './translator.js';

export * from './tayga.js';
export * from './siit.js';
export * from './translator.js';
export * from './edge.js';

/** What the translators' parts share: the NodeConfig's spec now, the log, the check period. */
interface PartOptions {
  current: () => NodeConfigSpec | undefined;
  logger: Logger;
  /** How often a translator checks that its device is still there (--resync). */
  periodMs: number;
}

/**
 * A translator as an agent part: it converges on start and on every NodeConfig change (a no-op
 * unless what `want` picks of the spec changed), checks its device every period, and stops
 * with the agent.
 */
export function translatorPart<T>(
  name: string,
  translator: TaygaTranslator<T>,
  want: (spec: NodeConfigSpec | undefined) => T | undefined,
  o: PartOptions,
) {
  const failed = (e: unknown) =>
    o.logger.debug(`${name} translator: converge failed (retried)`, { error: String(e) });
  const converge = (spec: NodeConfigSpec | undefined) =>
    translator.converge(want(spec)).catch(failed);
  const checks = new Loop({
    name: `${name} translator`,
    periodMs: o.periodMs,
    sync: () => translator.check().catch(failed),
    backoff: false,
  });
  return {
    onNodeConfig: (nc: { spec: NodeConfigSpec } | undefined) => void converge(nc?.spec),
    component: {
      name: `${name} translator`,
      start: async () => {
        await converge(o.current());
        checks.start();
      },
      stop: async () => {
        await checks.stop();
        await translator.stop();
      },
    },
  };
}

/** The node's translators as agent parts: NodeConfig listeners and components (absent ones none). */
export function translatorParts(
  translators: { nat64?: Nat64Translator | undefined; interNode?: InterNodeTranslator | undefined },
  o: PartOptions,
) {
  const parts = [
    ...(translators.nat64 ? [translatorPart('NAT64', translators.nat64, (s) => s?.nat64, o)] : []),
    ...(translators.interNode
      ? [translatorPart('inter-node IPv4', translators.interNode, interNodeOf, o)]
      : []),
  ];
  return {
    listeners: parts.map((p) => p.onNodeConfig),
    components: parts.map((p) => p.component),
  };
}
