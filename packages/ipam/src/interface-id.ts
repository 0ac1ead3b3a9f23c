// Interface-ID algorithms: where in the node prefix the search for a free address starts.
// `random` starts anywhere, `stable` at a hash of the pod's namespace/name, `sequential` at
// the lowest offset that may be free. From the start the search walks upwards (wrapping at
// the end, jumping over reserved ranges) to the first free address: a deterministic next
// candidate on collision. Each algorithm is one record of INTERFACE_ID_ALGORITHMS.
import { createHash, randomBytes as cryptoRandomBytes } from 'node:crypto';
import { IpAlgo } from '@flock/api';
import { nextUnreservedOffset, type ReservedOffsets } from './reserved.js';

/** Source of random bytes; crypto.randomBytes unless a test injects its own. */
export type RandomBytes = (count: number) => Uint8Array;

export const defaultRandomBytes: RandomBytes = (count) => cryptoRandomBytes(count);

function bytesToBigInt(bytes: Uint8Array): bigint {
  let value = 0n;
  for (const byte of bytes) value = (value << 8n) | BigInt(byte);
  return value;
}

function lowBits(value: bigint, bits: number): bigint {
  return value & ((1n << BigInt(bits)) - 1n);
}

/** A uniformly random offset of `bits` bits. */
export function randomOffset(bits: number, randomBytes: RandomBytes): bigint {
  return lowBits(bytesToBigInt(randomBytes(Math.ceil(bits / 8))), bits);
}

/** The offset derived from a pod's identity: the first `bits` bits of SHA-256("namespace/name"). */
export function stableOffset(bits: number, namespace: string, name: string): bigint {
  const digest = createHash('sha256').update(`${namespace}/${name}`).digest();
  return bytesToBigInt(digest) >> BigInt(256 - bits);
}

/**
 * The first offset at or after `start` (wrapping once) that is neither reserved nor taken;
 * undefined when every offset is.
 */
export function probeFree(
  reserved: ReservedOffsets,
  start: bigint,
  isTaken: (offset: bigint) => boolean,
): bigint | undefined {
  let wrapped = false;
  let candidate: bigint | undefined = start;
  for (;;) {
    candidate = nextUnreservedOffset(reserved, candidate);
    if (candidate === undefined) {
      if (wrapped) return undefined;
      wrapped = true;
      candidate = nextUnreservedOffset(reserved, 0n);
      if (candidate === undefined) return undefined;
    }
    if (wrapped && candidate >= start) return undefined;
    if (!isTaken(candidate)) return candidate;
    candidate += 1n;
  }
}

/** What an algorithm may start its search from. */
interface SearchStart {
  /** Host bits of the prefix. */
  bits: number;
  namespace: string;
  name: string;
  /** No offset below this one is free (the address book's hint). */
  lowestMaybeFree: bigint;
  randomBytes: RandomBytes;
}

/** Everything an interface-ID algorithm decides; a new algorithm is one more record. */
export interface InterfaceIdAlgorithm {
  /** The offset the search for a free address starts at. */
  start(from: SearchStart): bigint;
  /** The same pod coming back (e.g. a StatefulSet member) takes back what it released, IPv4 too. */
  reclaim: boolean;
  /** The search started at the book's hint, so what it found moves the hint up. */
  advancesHint: boolean;
}

/** Keyed by the API's IpAlgo: the compiler names every algorithm missing a record. */
export const INTERFACE_ID_ALGORITHMS: Readonly<Record<IpAlgo, InterfaceIdAlgorithm>> = {
  random: {
    start: (s) => randomOffset(s.bits, s.randomBytes),
    reclaim: false,
    advancesHint: false,
  },
  sequential: { start: (s) => s.lowestMaybeFree, reclaim: false, advancesHint: true },
  stable: {
    start: (s) => stableOffset(s.bits, s.namespace, s.name),
    reclaim: true,
    advancesHint: false,
  },
};

/** The record of `algo`; throws for a name that is not an IpAlgo (never a silent fallback). */
export function interfaceIdAlgorithm(algo: IpAlgo): InterfaceIdAlgorithm {
  if (!Object.hasOwn(INTERFACE_ID_ALGORITHMS, algo)) {
    throw new TypeError(
      `unknown ip-algo ${JSON.stringify(algo)}: one of ${IpAlgo.options.join(', ')}`,
    );
  }
  return INTERFACE_ID_ALGORITHMS[algo];
}
