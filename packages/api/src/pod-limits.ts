// How much of one pod flock keeps. The API server bounds each label (a key of 317 characters, a
// value of 63) and annotation in size but not how many: these bound a pod's share of every
// agent's memory and of the peer slices the operator publishes. A pod over a limit is kept
// without its labels and named ports, under OVER_LIMIT_LABEL: it matches no selector (no peer
// of any rule, isolated both ways on its own node).

/** Longest flock annotation value kept; a longer one is kept as OVERSIZE (no parser accepts it). */
export const MAX_ANNOTATION_BYTES = 4096;
export const OVERSIZE = '<over 4096 bytes: not kept by flock>';

/** Most labels and named ports of a pod that are kept. */
export const MAX_POD_LABELS = 64;
export const MAX_NAMED_PORTS = 64;

/**
 * The label an over-limit pod is kept with instead of its own. Not a valid label key: no real
 * pod or selector names it.
 */
export const OVER_LIMIT_LABEL = 'flock:over-limit';

/** Why a pod with this many labels and named ports is over the limits (undefined: it is not). */
export function overLimitReason(labels: number, ports: number): string | undefined {
  if (labels > MAX_POD_LABELS) return `${labels} labels (flock keeps at most ${MAX_POD_LABELS})`;
  if (ports > MAX_NAMED_PORTS)
    return `${ports} named ports (flock keeps at most ${MAX_NAMED_PORTS})`;
  return undefined;
}
