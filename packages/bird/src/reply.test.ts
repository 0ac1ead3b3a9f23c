import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BirdCommandError,
  BirdProtocolError,
  ReplyParser,
  parseConfigLocation,
  parseReplies,
  type BirdReply,
} from './reply.js';

/** A reply recorded from a real BIRD 2.0.12 (see __fixtures__/replies). */
function recorded(name: string): string {
  return readFileSync(join(import.meta.dirname, '__fixtures__', 'replies', `${name}.txt`), 'utf8');
}

function one(text: string): BirdReply {
  const replies = parseReplies(text);
  expect(replies).toHaveLength(1);
  return replies[0] as BirdReply;
}

describe('reply parser on recorded replies', () => {
  it('reads the welcome', () => {
    expect(one(recorded('welcome'))).toEqual({
      code: 1,
      text: 'BIRD 2.0.12 ready.',
      lines: [{ code: 1, text: 'BIRD 2.0.12 ready.' }],
    });
  });

  it('gives continuation lines the code of the line before', () => {
    const reply = one(recorded('show-protocols-node'));
    expect(reply.code).toBe(0);
    expect(reply.lines.map((l) => l.code)).toEqual([2002, 1002, 1002, 1002, 1002, 1002, 0]);
    expect(reply.lines[2]?.text).toMatch(/^flock_aggregates6 +Static/);
  });

  it('keeps the code changes inside one reply (1002 row, 1006 details, next 1002 row)', () => {
    const reply = one(recorded('show-protocols-all-node'));
    const codes = reply.lines.map((l) => l.code);
    expect(codes.filter((c) => c === 1002)).toHaveLength(5);
    expect(codes.at(-1)).toBe(0);
    expect(reply.lines.find((l) => l.text.includes('Neighbor address: 203.0.113.1'))?.code).toBe(
      1006,
    );
  });

  it('reads configure replies: progress line, then the final code', () => {
    expect(one(recorded('configure-ok'))).toMatchObject({ code: 3, text: 'Reconfigured' });
    expect(one(recorded('configure-check-ok'))).toMatchObject({
      code: 20,
      text: 'Configuration OK',
    });
    expect(one(recorded('configure-in-progress'))).toMatchObject({ code: 4 });
    const error = one(recorded('configure-syntax-error'));
    expect(error.code).toBe(8002);
    expect(error.lines[0]).toEqual({ code: 2, text: 'Reading configuration from node.conf' });
  });

  it('reads error replies', () => {
    expect(one(recorded('show-protocols-nomatch'))).toMatchObject({
      code: 8003,
      text: 'No protocols match',
    });
    expect(one(recorded('command-syntax-error')).code).toBe(9001);
  });

  it('gives the same replies however the byte stream is cut', () => {
    const stream = ['welcome', 'show-protocols-all-node', 'configure-syntax-error', 'show-status']
      .map(recorded)
      .join('');
    const whole = parseReplies(stream);
    expect(whole).toHaveLength(4);
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 1, max: stream.length - 1 }), { maxLength: 40 }),
        (cuts) => {
          const parser = new ReplyParser();
          const got: BirdReply[] = [];
          let at = 0;
          for (const cut of [...cuts].sort((a, b) => a - b)) {
            got.push(...parser.push(stream.slice(at, cut)));
            at = cut;
          }
          got.push(...parser.push(stream.slice(at)));
          expect(got).toEqual(whole);
          expect(parser.partial).toBe(false);
        },
      ),
    );
  });
});

describe('reply parser edge cases', () => {
  it('sets unsolicited "+" lines aside', () => {
    const parser = new ReplyParser();
    expect(parser.push('+some log line\n0000 \n')).toEqual([
      { code: 0, text: '', lines: [{ code: 0, text: '' }] },
    ]);
    expect(parser.unsolicited).toEqual(['some log line']);
  });

  it('refuses lines outside the protocol', () => {
    expect(() => parseReplies('hello\n')).toThrow(BirdProtocolError);
    expect(() => parseReplies(' continuation without a code\n')).toThrow(BirdProtocolError);
    expect(() => parseReplies('0001-unfinished\n')).toThrow(/middle of a reply/);
  });

  it('locates configuration errors', () => {
    expect(parseConfigLocation("/etc/bird/bird.conf:4:1 syntax error, unexpected '}'")).toEqual({
      file: '/etc/bird/bird.conf',
      line: 4,
      column: 1,
    });
    expect(parseConfigLocation('/x.conf: No such file or directory')).toBeUndefined();
    const e = new BirdCommandError('configure', one(recorded('configure-syntax-error')));
    expect(e.location).toEqual({ file: 'node.conf', line: 4, column: 1 });
    expect(e.message).toBe(
      `BIRD refused "configure": node.conf:4:1 syntax error, unexpected '}', expecting ';'`,
    );
  });
});
