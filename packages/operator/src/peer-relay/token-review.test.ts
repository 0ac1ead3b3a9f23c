import { describe, expect, it } from 'vitest';
import { tokenAuthenticator } from './token-review.js';

const AGENT = 'system:serviceaccount:flock-system:flock-agent';

describe('tokenAuthenticator', () => {
  it('allows only the named users, and keeps answers for a while', async () => {
    let now = 0;
    const asked: string[] = [];
    const users: Record<string, string> = { good: AGENT, other: 'system:serviceaccount:x:y' };
    const auth = tokenAuthenticator(
      async (t) => {
        asked.push(t);
        return users[t];
      },
      { allowed: [AGENT], now: () => now },
    );
    expect(await auth('good')).toBe('allowed');
    expect(await auth('other')).toBe('denied');
    expect(await auth('made-up')).toBe('denied');
    expect(await auth('')).toBe('denied');
    expect(await auth('good')).toBe('allowed');
    expect(asked).toEqual(['good', 'other', 'made-up']);
    // A denial is kept 5 s, an answer 60 s.
    now = 6_000;
    expect(await auth('made-up')).toBe('denied');
    expect(await auth('good')).toBe('allowed');
    expect(asked).toEqual(['good', 'other', 'made-up', 'made-up']);
    now = 61_000;
    delete users['good'];
    expect(await auth('good')).toBe('denied');
  });

  it('asks once for a token asked for at once, and at most maxInFlight at a time', async () => {
    const waiting: (() => void)[] = [];
    let reviews = 0;
    const auth = tokenAuthenticator(
      (t) =>
        new Promise((resolve) => {
          reviews++;
          waiting.push(() => resolve(t === 'good' ? AGENT : undefined));
        }),
      { allowed: [AGENT], maxInFlight: 2 },
    );
    const a = auth('good');
    const b = auth('good');
    const c = auth('x1');
    expect(await auth('x2')).toBe('busy');
    expect(reviews).toBe(2);
    for (const w of waiting) w();
    expect(await Promise.all([a, b, c])).toEqual(['allowed', 'allowed', 'denied']);
  });

  it('says busy, and keeps nothing, when the API server does not answer', async () => {
    let fail = true;
    const auth = tokenAuthenticator(
      async () => {
        if (fail) throw new Error('connection refused');
        return AGENT;
      },
      { allowed: [AGENT] },
    );
    expect(await auth('good')).toBe('busy');
    fail = false;
    expect(await auth('good')).toBe('allowed');
  });

  it('answers known tokens but reviews no new one when the caller forbids it', async () => {
    const asked: string[] = [];
    const auth = tokenAuthenticator(
      async (t) => {
        asked.push(t);
        return t === 'good' ? AGENT : undefined;
      },
      { allowed: [AGENT] },
    );
    expect(await auth('good')).toBe('allowed');
    expect(await auth('bad')).toBe('denied');
    const forbid = () => false;
    expect(await auth('good', forbid)).toBe('allowed');
    expect(await auth('bad', forbid)).toBe('denied');
    expect(await auth('new', forbid)).toBe('limited');
    expect(await auth('new', () => true)).toBe('denied');
    expect(asked).toEqual(['good', 'bad', 'new']);
  });

  it('keeps allowed answers apart: a flood of denials does not push them out', async () => {
    const asked: string[] = [];
    const auth = tokenAuthenticator(
      async (t) => {
        asked.push(t);
        return t === 'good' ? AGENT : undefined;
      },
      { allowed: [AGENT], maxEntries: 3 },
    );
    expect(await auth('good')).toBe('allowed');
    for (let i = 0; i < 10; i++) expect(await auth(`made-up-${i}`)).toBe('denied');
    expect(await auth('good')).toBe('allowed');
    expect(asked.filter((t) => t === 'good')).toHaveLength(1);
    // The denials kept are bounded: the oldest was forgotten and is reviewed again.
    expect(await auth('made-up-0')).toBe('denied');
    expect(asked.filter((t) => t === 'made-up-0')).toHaveLength(2);
  });
});
