// Who may read the peer relay: a bearer token that the API server says (TokenReview) belongs to
// one of the allowed users, the agents' service account. Peer records are every pod's labels and
// addresses: a tenant pod that reaches the relay's port must not read them. Answers are kept for
// a while by the token's hash (an agent reconnecting costs no review), and reviews in flight are
// bounded: a flood of made-up tokens costs the API server at most `maxInFlight` reviews at a time.
// Allowed and denied answers are kept apart, so a flood of denials cannot push the agents' tokens
// out; a caller may forbid a review (`mayReview`): a known token is still answered, an unknown
// one is 'limited'.
import { createHash } from 'node:crypto';
import type { KubeTransport } from '@flock/kube';
import { z } from 'zod';

export type Verdict = 'allowed' | 'denied' | 'busy' | 'limited';
export type Authenticate = (token: string, mayReview?: () => boolean) => Promise<Verdict>;

const TokenReviewStatus = z.looseObject({
  status: z
    .looseObject({
      authenticated: z.boolean().optional(),
      user: z.looseObject({ username: z.string().optional() }).optional(),
    })
    .optional(),
});

export interface TokenReviewOptions {
  /** Usernames allowed, e.g. system:serviceaccount:flock-system:flock-agent. */
  allowed: readonly string[];
  /** How long an answer is kept (default 60 s; a denial 5 s). */
  ttlMs?: number;
  maxInFlight?: number;
  /** Answers kept at most, of each kind (default 20,000 allowed and 20,000 denied). */
  maxEntries?: number;
  now?: () => number;
}

/** The username the API server says a token is, or undefined when it is not authenticated. */
export async function reviewToken(
  transport: KubeTransport,
  token: string,
): Promise<string | undefined> {
  const answer = await transport.request({
    method: 'POST',
    path: '/apis/authentication.k8s.io/v1/tokenreviews',
    body: { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token } },
  });
  const status = TokenReviewStatus.parse(answer).status;
  return status?.authenticated === true ? status.user?.username : undefined;
}

export function tokenAuthenticator(
  review: (token: string) => Promise<string | undefined>,
  o: TokenReviewOptions,
): Authenticate {
  const allowed = new Set(o.allowed);
  const ttl = o.ttlMs ?? 60_000;
  const maxInFlight = o.maxInFlight ?? 16;
  const maxEntries = o.maxEntries ?? 20_000;
  const now = o.now ?? Date.now;
  // token hash -> until when the answer holds
  const known = { allowed: new Map<string, number>(), denied: new Map<string, number>() };
  const keep = (ok: boolean, key: string, until: number) => {
    known.allowed.delete(key);
    known.denied.delete(key);
    const answer = ok ? known.allowed : known.denied;
    if (answer.size >= maxEntries) answer.delete(answer.keys().next().value as string);
    answer.set(key, until);
  };
  const inFlight = new Map<string, Promise<Verdict>>();
  return async (token, mayReview) => {
    if (token.length === 0 || token.length > 16_384) return 'denied';
    const key = createHash('sha256').update(token).digest('hex');
    for (const answer of ['allowed', 'denied'] as const)
      if ((known[answer].get(key) ?? 0) > now()) return answer;
    const running = inFlight.get(key);
    if (running) return running;
    if (mayReview && !mayReview()) return 'limited';
    if (inFlight.size >= maxInFlight) return 'busy';
    const verdict = (async (): Promise<Verdict> => {
      try {
        const user = await review(token);
        const ok = user !== undefined && allowed.has(user);
        keep(ok, key, now() + (ok ? ttl : Math.min(ttl, 5_000)));
        return ok ? 'allowed' : 'denied';
      } catch {
        return 'busy'; // the API server did not answer: ask the agent to come back
      } finally {
        inFlight.delete(key);
      }
    })();
    inFlight.set(key, verdict);
    return verdict;
  };
}
