import { matchesSelector } from '@flock/api';
import { describe, expect, it } from 'vitest';
import {
  fieldValue,
  formatFieldSelector,
  matchesFieldSelector,
  parseFieldSelector,
  parseLabelSelector,
} from './selectors.js';

describe('label selectors', () => {
  it('parses the server syntax into a selector with the same meaning', () => {
    const text = 'app=web,tier in (a, b),env!=prod,ready,!legacy,x==1';
    const sel = parseLabelSelector(text);
    expect(sel.matchExpressions).toHaveLength(6);
    const ok = { app: 'web', tier: 'b', ready: '', x: '1' };
    expect(matchesSelector(sel, ok)).toBe(true);
    expect(matchesSelector(sel, { ...ok, env: 'prod' })).toBe(false);
    expect(matchesSelector(sel, { ...ok, legacy: 'y' })).toBe(false);
    expect(matchesSelector(sel, { ...ok, tier: 'c' })).toBe(false);
    expect(matchesSelector(parseLabelSelector(''), {})).toBe(true);
    expect(() => parseLabelSelector('a b=x')).toThrow(/invalid label selector/);
    expect(() => parseLabelSelector('a>1')).toThrow(/invalid label selector/);
    expect(() => parseLabelSelector('a in (x')).toThrow(/invalid label selector/);
  });
});

describe('field selectors', () => {
  it('formats with escapes and parses back', () => {
    const text = formatFieldSelector({ 'spec.nodeName': 'n1', 'metadata.name': 'a,b=c\\d' });
    expect(text).toBe('spec.nodeName=n1,metadata.name=a\\,b\\=c\\\\d');
    expect(parseFieldSelector(text)).toEqual([
      { field: 'spec.nodeName', op: '=', value: 'n1' },
      { field: 'metadata.name', op: '=', value: 'a,b=c\\d' },
    ]);
    expect(parseFieldSelector('status.phase!=Failed,a==b')).toEqual([
      { field: 'status.phase', op: '!=', value: 'Failed' },
      { field: 'a', op: '=', value: 'b' },
    ]);
    expect(() => formatFieldSelector({ 'spec nodeName': 'x' })).toThrow(/invalid field/);
  });

  it('matches like the API server: an absent field is the empty string', () => {
    const pod = { spec: { nodeName: 'n1' }, status: {} };
    expect(fieldValue(pod, 'spec.nodeName')).toBe('n1');
    expect(matchesFieldSelector(parseFieldSelector('spec.nodeName=n1'), pod)).toBe(true);
    expect(matchesFieldSelector(parseFieldSelector('status.phase='), pod)).toBe(true);
    expect(matchesFieldSelector(parseFieldSelector('spec.nodeName!=n1'), pod)).toBe(false);
  });
});
