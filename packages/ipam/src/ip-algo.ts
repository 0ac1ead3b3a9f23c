// Which interface-ID algorithm a pod's IPv6 address uses: the pod's annotation, else the
// NodeConfig's annotation (the node default), else random. An empty or missing value falls
// through silently; an invalid one falls through with one warning naming it and its source.
import {
  DEFAULT_IP_ALGO,
  IP_ALGO_ANNOTATION,
  parseIpAlgo,
  type IpAlgo,
  type Logger,
} from '@flock/api';

/** The one logging call this needs. */
export type WarnLogger = Pick<Logger, 'warn'>;

type Annotations = Readonly<Record<string, string>> | undefined;

export function resolveIpAlgo(
  podAnnotations: Annotations,
  nodeConfigAnnotations: Annotations,
  logger: WarnLogger,
): IpAlgo {
  const sources = [
    { source: 'pod', annotations: podAnnotations },
    { source: 'NodeConfig', annotations: nodeConfigAnnotations },
  ] as const;
  for (const { source, annotations } of sources) {
    const value = annotations?.[IP_ALGO_ANNOTATION];
    const parsed = parseIpAlgo(value);
    if (parsed?.ok) return parsed.value;
    if (parsed) {
      logger.warn(`ignoring the ${source} annotation ${IP_ALGO_ANNOTATION}: ${parsed.error}`, {
        annotation: IP_ALGO_ANNOTATION,
        source,
        value,
      });
    }
  }
  return DEFAULT_IP_ALGO;
}
