// BGP peers for BIRD: the NodeConfig's peers with each passwordSecretRef replaced by the
// password. The agent reads exactly the Secrets the NodeConfig names (GET by name; never a list
// or a watch, so RBAC can grant it those names only). A Secret that is gone, lacks the key or
// holds a password BIRD cannot take leaves its peer out (a session with a wrong password would
// never come up anyway) and the reason goes into NodeConfig status. A Secret that cannot be
// read for another reason (API down, 403) keeps the password last read, so an API hiccup does
// not drop a BGP session.
import type { Logger, NodeBgpPeer } from '@flock/api';
import { BirdPeer } from '@flock/bird';
import { SECRETS, isNotFound, objectPath, type KubeTransport } from '@flock/kube';
import { z } from 'zod';

/** A peer that is not given to BIRD, and why. */
export interface PeerProblem {
  address: string;
  asn: number;
  message: string;
}

export interface ResolvedPeers {
  peers: BirdPeer[];
  problems: PeerProblem[];
}

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
  private readonly lastGood = new Map<string, string>();

  constructor(
    private readonly read: SecretReader,
    private readonly defaultNamespace: string,
    private readonly logger: Logger,
  ) {}

  async resolve(peers: readonly NodeBgpPeer[]): Promise<ResolvedPeers> {
    const secrets = new Map<string, Promise<Record<string, string> | undefined>>();
    const out: ResolvedPeers = { peers: [], problems: [] };
    for (const peer of peers) {
      const { passwordSecretRef: ref, ...settings } = peer;
      let password: string | undefined;
      if (ref) {
        const namespace = ref.namespace ?? this.defaultNamespace;
        const key = `${namespace}/${ref.name}/${ref.key}`;
        const where = `Secret ${namespace}/${ref.name}`;
        const found = await this.lookup(secrets, namespace, ref.name, ref.key, where);
        if (found.ok) {
          password = found.password;
          this.lastGood.set(key, password);
        } else if (found.transient && this.lastGood.has(key)) {
          password = this.lastGood.get(key);
          this.logger.warn('cannot read a BGP password Secret; keeping the last password read', {
            peer: peer.address,
            error: found.message,
          });
        } else {
          this.lastGood.delete(key);
          out.problems.push({ address: peer.address, asn: peer.asn, message: found.message });
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
    for (const p of out.problems)
      this.logger.error('BGP peer left out of the BIRD configuration', { ...p });
    return out;
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
      return { ok: false, message: `cannot read ${where}: ${String(error)}`, transient: true };
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
