import { describe, expect, it } from 'vitest';
import { AnswerGate } from './answer-gate.js';

const settle = () => new Promise((r) => setTimeout(r, 0));

describe('AnswerGate', () => {
  it('answers no until the check said yes, and asks again soon while it says no', async () => {
    let answer = false;
    const triggers: number[] = [];
    const gate = new AnswerGate<number>(
      () => Promise.resolve(answer),
      (ms) => triggers.push(ms),
      { retryMs: 150 },
    );
    expect(gate.open(1)).toBe(false);
    await settle();
    expect(triggers).toEqual([150]); // still no: a pass again after retryMs
    answer = true;
    expect(gate.open(1)).toBe(false);
    await settle();
    expect(triggers).toEqual([150, 0]); // changed: a pass now
    expect(gate.open(1)).toBe(true);
    await settle();
    answer = false; // a non-sticky gate follows the check back to no
    expect(gate.open(1)).toBe(true);
    await settle();
    expect(gate.open(1)).toBe(false);
  });

  it('a failed check is a no, asked again', async () => {
    let fail = true;
    const triggers: number[] = [];
    const gate = new AnswerGate<string>(
      () => (fail ? Promise.reject(new Error('refused')) : Promise.resolve(true)),
      (ms) => triggers.push(ms),
    );
    await gate.ask(['a', 'a']);
    expect(triggers).toEqual([200]);
    fail = false;
    expect(gate.open('a')).toBe(false);
    await settle();
    expect(gate.open('a')).toBe(true);
  });
});
