import { describe, expect, it } from 'vitest';
import {
  LargeCommunity,
  StandardCommunity,
  communitiesOutside,
  isLargeCommunity,
  isStandardCommunity,
  parseCommunities,
  splitCommunities,
} from './communities.js';

describe('community grammar', () => {
  it.each([
    ['0:0', true],
    ['65000:100', true],
    ['65535:65535', true],
    ['65536:1', false],
    ['1:65536', false],
    ['65000', false],
    ['65000:1:2', false],
    [' 65000:100', false],
    ['-1:5', false],
  ])('standard %s → %s', (s, ok) => {
    expect(isStandardCommunity(s)).toBe(ok);
    expect(StandardCommunity.safeParse(s).success).toBe(ok);
  });

  it.each([
    ['65000:1:2', true],
    ['4294967295:4294967295:4294967295', true],
    ['4294967296:1:2', false],
    ['65000:1', false],
    ['1:2:3:4', false],
  ])('large %s → %s', (s, ok) => {
    expect(isLargeCommunity(s)).toBe(ok);
    expect(LargeCommunity.safeParse(s).success).toBe(ok);
  });

  it('splits a mixed list by kind, canonical and de-duplicated', () => {
    expect(splitCommunities(['65000:0100', '65000:100', '65000:1:2', 'junk'])).toEqual({
      standard: ['65000:100'],
      large: ['65000:1:2'],
    });
  });

  it('finds what a list does not allow, whatever the spelling', () => {
    const allowed = { standard: ['65000:100'], large: ['65000:1:2'] };
    expect(communitiesOutside(['65000:0100', '65000:1:2'], allowed)).toEqual([]);
    expect(communitiesOutside(['65000:101', '65000:1:3'], allowed)).toEqual([
      '65000:101',
      '65000:1:3',
    ]);
    expect(communitiesOutside(['65000:100'], undefined)).toEqual(['65000:100']);
  });
});

describe('bgp-communities annotation', () => {
  it('reads a comma-separated mixed list', () => {
    expect(parseCommunities(undefined)).toBeUndefined();
    expect(parseCommunities(' ')).toBeUndefined();
    expect(parseCommunities('65000:100, 65000:1:2,65000:0100')).toEqual({
      ok: true,
      value: ['65000:100', '65000:1:2'],
    });
  });

  it('refuses what is neither kind, naming it', () => {
    expect(parseCommunities('65000:100,no-export')).toEqual({
      ok: false,
      error: expect.stringContaining('"no-export" is neither'),
    });
    expect(parseCommunities('70000:1')).toMatchObject({ ok: false });
    expect(parseCommunities('65000:100,')).toMatchObject({ ok: false });
  });

  it('refuses more than 32 of a kind', () => {
    const many = Array.from({ length: 33 }, (_, i) => `65000:${i}`).join(',');
    expect(parseCommunities(many)).toMatchObject({
      ok: false,
      error: expect.stringContaining('at most 32'),
    });
  });
});
