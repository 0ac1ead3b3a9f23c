// The claim protocol against the API server. Creating the claim named after the address is
// the lock: of two agents racing, the API server lets one create it and answers the other 409.
// Every later change — a new holder, a node joining an anycast group, a withdrawal mark — is an
// update at the resourceVersion that was read, and a release a delete with that precondition,
// so a decision made on a stale read fails (409) and is made again on a fresh one.
//
// A pinned address passes to another pod only inside its namespace, only under the same key,
// and only once the holder cannot be announcing it any more: the holder pod is gone (or
// another pod has its name, or it terminated), or it is being deleted and either its agent
// marked the claim withdrawn (its node announces the address no more) or its node is not Ready
// (a dead node: the routers dropped its routes with its BGP session).
import {
  ADDRESSCLAIM_KIND,
  API_VERSION,
  AddressClaim,
  CLAIM_KEY_ANNOTATION,
  CniErrorCode,
  MAX_CLAIM_HOLDERS,
  claimName,
  type AddressClaimSpec,
  type ClaimHolder,
  type Logger,
  type Pod,
} from '@flock/api';
import {
  ADDRESSCLAIMS,
  apiErrorCode,
  isNotFound,
  objectPath,
  resourcePath,
  type KubeTransport,
} from '@flock/kube';
import { CniCommandError } from '../core/cni-error.js';

/** The pod that asks for a pinned address. */
export interface PinnedRequest {
  namespace: string;
  key: string;
  pod: string;
  uid: string;
}

interface ClaimBookOptions {
  transport: KubeTransport;
  nodeName: string;
  logger: Logger;
  /** The pod now, from the API server; undefined when it does not exist. */
  fetchPod: (namespace: string, name: string) => Promise<Pod | undefined>;
  /** Is the node Ready? undefined when there is no such Node. */
  nodeReady: (name: string) => Promise<boolean | undefined>;
  /** How long a claim waits for a terminating holder to withdraw (default 10 s). */
  handoverWaitMs?: number;
  /** Pause between two looks at a claim that is not free yet (default 250 ms). */
  pollMs?: number;
}

/** A claim as read, with the resourceVersion a write must carry. */
interface Read {
  claim: AddressClaim;
  resourceVersion: string;
}

type Decision =
  { act: 'mine' } | { act: 'take' } | { act: 'wait'; why: string } | { act: 'refuse'; why: string };

const TERMINAL = new Set(['Succeeded', 'Failed']);
/** Attempts after a 409 (someone wrote between our read and our write). */
const MAX_RACES = 20;

export class ClaimBook {
  constructor(private readonly o: ClaimBookOptions) {}

  /**
   * Claim a pinned address for a pod, or take it over; throws a CniCommandError if not. A
   * terminating holder whose node still announces the address is waited for up to `waitMs`
   * (default: the book's handoverWaitMs).
   */
  async claimPinned(
    address: string,
    want: PinnedRequest,
    options: { waitMs?: number } = {},
  ): Promise<void> {
    const deadline = Date.now() + (options.waitMs ?? this.o.handoverWaitMs ?? 10_000);
    const holder: ClaimHolder = { node: this.o.nodeName, pod: want.pod, uid: want.uid };
    for (let races = 0; races < MAX_RACES;) {
      const read = await this.read(address);
      if (!read) {
        const owner = { kind: 'Pinned' as const, namespace: want.namespace, key: want.key };
        if (await this.create(address, { ...owner, holders: [holder] })) return;
        races++;
        continue;
      }
      const decision = await this.decidePinned(read.claim, want);
      if (decision.act === 'mine') return;
      if (decision.act === 'refuse')
        throw new CniCommandError(
          CniErrorCode.NotAllowed,
          `pinned address ${address}: ${decision.why}`,
        );
      if (decision.act === 'wait') {
        if (Date.now() >= deadline)
          throw new CniCommandError(
            CniErrorCode.TryAgainLater,
            `pinned address ${address}: ${decision.why}; try again later`,
          );
        await sleep(this.o.pollMs ?? 250);
        continue;
      }
      if (await this.update(read, { ...read.claim.spec, holders: [holder] })) {
        this.o.logger.info('pinned address taken over', {
          address,
          pod: `${want.namespace}/${want.pod}`,
          from: read.claim.spec.holders[0]?.pod,
        });
        return;
      }
      races++;
    }
    throw this.contended(address);
  }

  /** Join this node to the anycast group of `address`; throws a CniCommandError if not allowed. */
  async joinAnycast(address: string, group: { namespace: string; key: string }): Promise<void> {
    const node = this.o.nodeName;
    for (let races = 0; races < MAX_RACES; races++) {
      const read = await this.read(address);
      if (!read) {
        if (await this.create(address, { kind: 'Anycast', ...group, holders: [{ node }] })) return;
        continue;
      }
      const { spec } = read.claim;
      const why =
        spec.kind !== 'Anycast'
          ? 'it is claimed as a pinned address'
          : spec.namespace !== group.namespace
            ? 'it belongs to another namespace'
            : spec.key !== group.key
              ? `it belongs to group ${spec.key} of this namespace, not ${group.key} (annotation ${CLAIM_KEY_ANNOTATION})`
              : spec.holders.length >= MAX_CLAIM_HOLDERS &&
                  !spec.holders.some((h) => h.node === node)
                ? `its group is on ${MAX_CLAIM_HOLDERS} nodes already`
                : undefined;
      if (why)
        throw new CniCommandError(CniErrorCode.NotAllowed, `anycast address ${address}: ${why}`);
      if (spec.holders.some((h) => h.node === node)) return;
      if (await this.update(read, { ...spec, holders: [...spec.holders, { node }] })) return;
    }
    throw this.contended(address);
  }

  /** Leave the anycast group of `address`; the last node to leave deletes the claim. */
  async leaveAnycast(address: string): Promise<void> {
    for (let races = 0; races < MAX_RACES; races++) {
      const read = await this.read(address);
      const spec = read?.claim.spec;
      if (!read || !spec || spec.kind !== 'Anycast') return;
      const holders = spec.holders.filter((h) => h.node !== this.o.nodeName);
      if (holders.length === spec.holders.length) return;
      const done = holders.length
        ? await this.update(read, { ...spec, holders })
        : await this.remove(read);
      if (done) return;
    }
    throw this.contended(address);
  }

  /** Release a pinned address this pod holds (nothing when another pod holds it by now). */
  async releasePinned(address: string, uid: string): Promise<void> {
    for (let races = 0; races < MAX_RACES; races++) {
      const read = await this.read(address);
      if (!read || read.claim.spec.holders[0]?.uid !== uid) return;
      if (await this.remove(read)) return;
    }
    throw this.contended(address);
  }

  /** Mark a pinned claim withdrawn: its holder's node announces the address no more. */
  async markWithdrawn(address: string, uid: string): Promise<void> {
    for (let races = 0; races < MAX_RACES; races++) {
      const read = await this.read(address);
      const holder = read?.claim.spec.holders[0];
      if (!read || holder?.uid !== uid || holder.withdrawn) return;
      const holders = [{ ...holder, withdrawn: true }];
      if (await this.update(read, { ...read.claim.spec, holders })) return;
    }
    throw this.contended(address);
  }

  /** Create a claim for a pod that already holds the address (start-up adoption). */
  adopt(address: string, spec: Omit<AddressClaimSpec, 'address'>): Promise<boolean> {
    return this.create(address, spec);
  }

  private async decidePinned(claim: AddressClaim, want: PinnedRequest): Promise<Decision> {
    const { spec } = claim;
    if (spec.kind !== 'Pinned')
      return { act: 'refuse', why: 'it is claimed as an anycast address' };
    // Nothing about the other namespace's holder: which pod, node or key is not ours to tell.
    if (spec.namespace !== want.namespace)
      return { act: 'refuse', why: 'it is claimed by another namespace' };
    const holder = spec.holders[0];
    if (!holder) return { act: 'take' };
    if (holder.uid === want.uid) return { act: 'mine' };
    if (spec.key !== want.key)
      return {
        act: 'refuse',
        why: `it is held by pod ${holder.pod} (key ${spec.key}; this pod's key is ${want.key}, annotation ${CLAIM_KEY_ANNOTATION})`,
      };
    const old = await this.o.fetchPod(spec.namespace, holder.pod ?? '');
    if (!old || old.metadata.uid !== holder.uid || TERMINAL.has(old.status?.phase ?? ''))
      return { act: 'take' };
    if (old.metadata.deletionTimestamp === undefined)
      return {
        act: 'refuse',
        why: `it is held by pod ${holder.pod}, which is not being deleted; it passes to a replacement once that pod is being deleted`,
      };
    if (holder.withdrawn) return { act: 'take' };
    if ((await this.o.nodeReady(holder.node)) !== true) return { act: 'take' };
    return {
      act: 'wait',
      why: `pod ${holder.pod} is being deleted but node ${holder.node} still announces the address`,
    };
  }

  private contended(address: string): CniCommandError {
    return new CniCommandError(
      CniErrorCode.TryAgainLater,
      `the claim of ${address} changed under ${MAX_RACES} attempts in a row; try again later`,
    );
  }

  private path(address: string): string {
    return objectPath(ADDRESSCLAIMS, claimName(address));
  }

  private async read(address: string): Promise<Read | undefined> {
    try {
      const claim = AddressClaim.parse(
        await this.o.transport.request({ method: 'GET', path: this.path(address) }),
      );
      return { claim, resourceVersion: claim.metadata.resourceVersion ?? '' };
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw unavailable(address, error);
    }
  }

  /** Create the claim; false when it exists already (another agent won the race). */
  private async create(address: string, spec: Omit<AddressClaimSpec, 'address'>): Promise<boolean> {
    try {
      await this.o.transport.request({
        method: 'POST',
        path: resourcePath(ADDRESSCLAIMS),
        body: {
          apiVersion: API_VERSION,
          kind: ADDRESSCLAIM_KIND,
          metadata: { name: claimName(address) },
          spec: { address, ...spec },
        },
      });
      return true;
    } catch (error) {
      if (apiErrorCode(error) === 409) return false;
      throw unavailable(address, error);
    }
  }

  /** Replace the spec at the read resourceVersion; false on a conflict (re-read and decide). */
  private async update(read: Read, spec: AddressClaimSpec): Promise<boolean> {
    const { claim } = read;
    try {
      await this.o.transport.request({
        method: 'PUT',
        path: this.path(claim.spec.address),
        body: {
          ...claim,
          metadata: { ...claim.metadata, resourceVersion: read.resourceVersion },
          spec,
        },
      });
      return true;
    } catch (error) {
      if (apiErrorCode(error) === 409 || isNotFound(error)) return false;
      throw unavailable(claim.spec.address, error);
    }
  }

  /** Delete at the read resourceVersion; false when it changed meanwhile. */
  private async remove(read: Read): Promise<boolean> {
    try {
      await this.o.transport.request({
        method: 'DELETE',
        path: this.path(read.claim.spec.address),
        body: { preconditions: { resourceVersion: read.resourceVersion } },
      });
      return true;
    } catch (error) {
      if (isNotFound(error)) return true;
      if (apiErrorCode(error) === 409) return false;
      throw unavailable(read.claim.spec.address, error);
    }
  }
}

function unavailable(address: string, error: unknown): CniCommandError {
  const message = error instanceof Error ? error.message : String(error);
  return new CniCommandError(
    CniErrorCode.TryAgainLater,
    `cannot read or write the claim of ${address} (${message}); try again later`,
  );
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
