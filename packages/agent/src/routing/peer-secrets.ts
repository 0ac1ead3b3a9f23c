// BGP peers for BIRD: the NodeConfig's peers with each passwordSecretRef replaced by the
// password. The agent reads exactly the Secrets the NodeConfig names (GET by name; never a list
// or a watch, so RBAC can grant it those names only). A Secret that is gone, lacks the key or
// holds a password BIRD cannot take leaves its peer out (a session with a wrong password would
// never come up anyway) and the reason goes into NodeConfig status. A Secret that cannot be
// read for another reason (API down, 403) keeps the password last read — also across agent
// restarts, through the password file (password-file.ts) — so an API hiccup never drops a BGP
// session; the peer is reported as running on a password that could not be re-read.
import type { Logger, NodeBgpPeer } from '@flock/api';
import { BirdPeer } from '@flock/bird';
import { SECRETS, apiErrorCode, isNotFound, objectPath, type KubeTransport } from '@flock/kube';
import { z } from 'zod';
import type { PasswordMemory } from './password-file.js';

/** A peer that is not given to BIRD, and why. */
export interface PeerProblem {
  address: string;
  asn: number;
  message: string;
}

export interface ResolvedPeers {
  peers: BirdPeer[];
  /** Peers left out of BIRD's configuration, and why. */
  problems: PeerProblem[];
  /** Peers given to BIRD with the last password read, because their Secret cannot be read now. */
  stale: PeerProblem[];
}

export const noPeers = (): ResolvedPeers => ({ peers: [], problems: [], stale: [] });

/** A Secret's data (base64 values); undefined when the Secret does not exist. */
export type SecretReader = (
  namespace: string,
  name: string,
) => Promise<Record<string, string> | undefined>;

const SecretData = z.object({ data: z.record(z.string(), z.string()).optional() });

export function apiSecretReader(transport: KubeTransport): SecretReader {
  return async (namespace, name) => {
    try {
      const secret = SecretData.parse(
        await transport.request({ method: 'GET', path: objectPath(SECRETS, name, namespace) }),
      );
      return secret.data ?? {};
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw error;
    }
  };
}

type Lookup = { ok: true; password: string } | { ok: false; message: string; transient: boolean };

export class PeerPasswords {
  /** Last password read per namespace/name/key, for transient read failures. */
  private lastGood = new Map<string, string>();
  private loaded: Promise<void> | undefined;
  /** What the password file holds (JSON of lastGood), to write it only on change. */
  private saved = '{}';

  constructor(
    private readonly read: SecretReader,
    private readonly defaultNamespace: string,
    private readonly logger: Logger,
    /** Keeps lastGood across restarts; without it, only in memory. */
    private readonly memory?: PasswordMemory,
  ) {}

  async resolve(peers: readonly NodeBgpPeer[]): Promise<ResolvedPeers> {
    await (this.loaded ??= this.load());
    const secrets = new Map<string, Promise<Record<string, string> | undefined>>();
    const out = noPeers();
    const used = new Set<string>();
    for (const peer of peers) {
      const { passwordSecretRef: ref, ...settings } = peer;
      let password: string | undefined;
      if (ref) {
        const namespace = ref.namespace ?? this.defaultNamespace;
        const key = `${namespace}/${ref.name}/${ref.key}`;
        const where = `Secret ${namespace}/${ref.name}`;
        used.add(key);
        const found = await this.lookup(secrets, namespace, ref.name, ref.key, where);
        if (found.ok) {
          password = found.password;
          this.lastGood.set(key, password);
        } else if (found.transient && this.lastGood.has(key)) {
          password = this.lastGood.get(key);
          const message = `${found.message}; BIRD keeps the last password read from it`;
          out.stale.push({ address: peer.address, asn: peer.asn, message });
        } else {
          this.lastGood.delete(key);
          const message = found.transient
            ? `${found.message}; no password was ever read from it on this node`
            : found.message;
          out.problems.push({ address: peer.address, asn: peer.asn, message });
          continue;
        }
      }
      const parsed = BirdPeer.safeParse({ ...settings, ...(password ? { password } : {}) });
      if (!parsed.success) {
        const why = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
        out.problems.push({ address: peer.address, asn: peer.asn, message: why });
        continue;
      }
      out.peers.push(parsed.data);
    }
    // Secrets no peer names any more are forgotten.
    for (const key of [...this.lastGood.keys()]) if (!used.has(key)) this.lastGood.delete(key);
    await this.save();
    for (const p of out.stale)
      this.logger.warn('cannot read a BGP password Secret; keeping the last password read', {
        ...p,
      });
    for (const p of out.problems)
      this.logger.error('BGP peer left out of the BIRD configuration', { ...p });
    return out;
  }

  private async load(): Promise<void> {
    if (!this.memory) return;
    const kept = await this.memory.load();
    for (const [key, password] of kept)
      if (!this.lastGood.has(key)) this.lastGood.set(key, password);
    this.saved = stableKey(kept);
  }

  private async save(): Promise<void> {
    const now = stableKey(this.lastGood);
    if (!this.memory || now === this.saved) return;
    try {
      await this.memory.save(this.lastGood);
      this.saved = now;
    } catch (error) {
      this.logger.warn('cannot write the BGP password file; the passwords stay in memory', {
        error: String(error),
      });
    }
  }

  private async lookup(
    cache: Map<string, Promise<Record<string, string> | undefined>>,
    namespace: string,
    name: string,
    key: string,
    where: string,
  ): Promise<Lookup> {
    const id = `${namespace}/${name}`;
    let pending = cache.get(id);
    if (!pending) {
      pending = this.read(namespace, name);
      cache.set(id, pending);
    }
    let data: Record<string, string> | undefined;
    try {
      data = await pending;
    } catch (error) {
      // The chart grants `get` on the Secrets its values name, and on no other.
      const hint =
        apiErrorCode(error) === 403
          ? ' (the agent may read only the Secrets listed in the chart value agent.bgpPasswordSecrets)'
          : '';
      return {
        ok: false,
        message: `cannot read ${where}: ${String(error)}${hint}`,
        transient: true,
      };
    }
    if (!data) return { ok: false, message: `password ${where} not found`, transient: false };
    const encoded = data[key];
    if (encoded === undefined)
      return { ok: false, message: `${where} has no key ${JSON.stringify(key)}`, transient: false };
    // Secrets made from files often end in a newline that is not part of the password.
    const password = Buffer.from(encoded, 'base64')
      .toString('utf8')
      .replace(/\r?\n$/, '');
    if (!password) return { ok: false, message: `${where} key ${key} is empty`, transient: false };
    return { ok: true, password };
  }
}

const stableKey = (m: ReadonlyMap<string, string>) => JSON.stringify([...m].sort());

/**
 * Warning Events worth sending after a re-read: a peer that newly runs on a password that
 * could not be re-read, or that is newly left out. Keyed by peer and kind, not by message: an
 * outage whose error text changes is one Event, not one per refresh.
 */
export function peerWarnings(
  before: ResolvedPeers,
  after: ResolvedPeers,
): { reason: string; note: string }[] {
  const kinds = (r: ResolvedPeers) =>
    new Set([
      ...r.stale.map((p) => `stale ${p.address}`),
      ...r.problems.map((p) => `out ${p.address}`),
    ]);
  const had = kinds(before);
  return [
    ...after.stale
      .filter((p) => !had.has(`stale ${p.address}`))
      .map((p) => ({
        reason: 'BgpPasswordUnreadable',
        note: `BGP peer ${p.address}: ${p.message}`,
      })),
    ...after.problems
      .filter((p) => !had.has(`out ${p.address}`))
      .map((p) => ({
        reason: 'BgpPeerNotConfigured',
        note: `BGP peer ${p.address} left out: ${p.message}`,
      })),
  ];
}
