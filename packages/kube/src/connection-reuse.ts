// client-node 2.x builds a new undici Agent in every applySecurityAuthentication call, so every
// API request opens a new TLS connection (and reads the credential files again). With 5,000
// NodeConfigs to write that costs the operator and the API server more CPU than the work
// itself, and the abandoned agents hold memory until they are collected. This keeps one
// agent (one connection pool) and hands it to every request; it is replaced every
// `maxAgeMs` so rotated client certificates and CAs are picked up, and the replaced one is
// closed gracefully a while later (see RETIRED_POOL_GRACE_MS). Bearer tokens travel in headers, which are
// still set per request. HttpTransport applies it to the KubeConfig it is given.
import type { KubeConfig } from '@kubernetes/client-node';

type Dispatcher = NonNullable<
  ReturnType<Parameters<KubeConfig['applySecurityAuthentication']>[0]['getDispatcher']>
>;

/**
 * A replaced pool is closed this much later, not at once: a request that picked it up just
 * before the replacement has not dispatched yet, and undici refuses dispatches on a closed
 * pool (ClientClosedError) — the request would fail for nothing. Its open streams end with their
 * own timeouts or aborts meanwhile.
 */
export const RETIRED_POOL_GRACE_MS = 60_000;

function closeLater(dispatcher: Dispatcher | undefined, delayMs: number): void {
  if (!dispatcher) return;
  setTimeout(() => void dispatcher.close().catch(() => {}), delayMs).unref();
}

/** Per wrapped KubeConfig: start over with a new pool on the next request. */
const retirers = new WeakMap<KubeConfig, () => void>();

/**
 * The shared pool may sit on a dead connection (a peer that vanished without a FIN or RST):
 * every request and watch would queue on it until undici's own health check gives up,
 * minutes later. Retire it: the next request opens a new pool, the old one closes once its
 * requests are done (they end with their own timeouts).
 */
export function retireConnections(kc: KubeConfig): void {
  retirers.get(kc)?.();
}

/** Make `kc` share one connection pool across requests (idempotent); returns `kc`. */
export function reuseConnections(
  kc: KubeConfig,
  maxAgeMs = 5 * 60_000,
  now = Date.now,
  graceMs = RETIRED_POOL_GRACE_MS,
): KubeConfig {
  if (retirers.has(kc)) return kc;
  const apply = kc.applySecurityAuthentication.bind(kc);
  let shared: { dispatcher: Dispatcher; context: string | undefined; since: number } | undefined;
  retirers.set(kc, () => {
    const old = shared;
    shared = undefined;
    closeLater(old?.dispatcher, graceMs);
  });
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
    closeLater(old?.dispatcher, graceMs);
  };
  return kc;
}
