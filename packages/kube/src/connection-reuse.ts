// client-node 2.x builds a new undici Agent in every applySecurityAuthentication call, so every
// API request opens a new TLS connection (and reads the credential files again). With 5,000
// NodeConfigs to write that costs the operator and the API server more CPU than the work
// itself, and the abandoned agents hold memory until they are collected. This keeps one
// agent (one connection pool) and hands it to every request; it is replaced every
// `maxAgeMs` so rotated client certificates and CAs are picked up, and the replaced one is
// closed gracefully (open watches finish on it). Bearer tokens travel in headers, which are
// still set per request. HttpTransport applies it to the KubeConfig it is given.
import type { KubeConfig } from '@kubernetes/client-node';

type Dispatcher = NonNullable<
  ReturnType<Parameters<KubeConfig['applySecurityAuthentication']>[0]['getDispatcher']>
>;

const wrapped = new WeakSet<KubeConfig>();

/** Make `kc` share one connection pool across requests (idempotent); returns `kc`. */
export function reuseConnections(
  kc: KubeConfig,
  maxAgeMs = 5 * 60_000,
  now = Date.now,
): KubeConfig {
  if (wrapped.has(kc)) return kc;
  wrapped.add(kc);
  const apply = kc.applySecurityAuthentication.bind(kc);
  let shared: { dispatcher: Dispatcher; context: string | undefined; since: number } | undefined;
  kc.applySecurityAuthentication = async (ctx) => {
    await apply(ctx);
    const fresh = ctx.getDispatcher();
    if (!fresh) return;
    const context = kc.getCurrentContext();
    if (shared && shared.context === context && now() - shared.since < maxAgeMs) {
      ctx.setDispatcher(shared.dispatcher);
      void fresh.close().catch(() => {}); // never used: no connection to wait for
      return;
    }
    const old = shared;
    shared = { dispatcher: fresh, context, since: now() };
    void old?.dispatcher.close().catch(() => {});
  };
  return kc;
}
