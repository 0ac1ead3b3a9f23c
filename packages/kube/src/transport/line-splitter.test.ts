import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { LineSplitter } from './line-splitter.js';

describe('LineSplitter', () => {
  it('gives the same lines however the bytes are cut into chunks, multi-byte characters included', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.string({ unit: 'grapheme', maxLength: 40 }).map((s) => s.replaceAll('\n', '')),
          {
            maxLength: 8,
          },
        ),
        fc.array(fc.integer({ min: 1, max: 7 }), { minLength: 1, maxLength: 20 }),
        (lines, cuts) => {
          const bytes = Buffer.from(lines.map((l) => `${l}\n`).join(''), 'utf8');
          const splitter = new LineSplitter();
          const got: string[] = [];
          for (let at = 0, i = 0; at < bytes.length; i++) {
            const size = cuts[i % cuts.length] as number;
            got.push(...splitter.push(bytes.subarray(at, at + size)));
            at += size;
          }
          expect(got).toEqual(lines.map((l) => l.trim()).filter((l) => l !== ''));
          expect(splitter.rest()).toBe('');
        },
      ),
    );
  });

  it('keeps an unfinished line for later', () => {
    const s = new LineSplitter();
    expect(s.push(Buffer.from('{"a":1}\n{"b"'))).toEqual(['{"a":1}']);
    expect(s.rest()).toBe('{"b"');
    expect(s.push(Buffer.from(':2}\r\n\n'))).toEqual(['{"b":2}']);
    expect(s.rest()).toBe('');
  });
});
