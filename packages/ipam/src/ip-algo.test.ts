import { IP_ALGO_ANNOTATION } from '@flock/api';
import { describe, expect, it } from 'vitest';
import { resolveIpAlgo, type WarnLogger } from './ip-algo.js';

function recorder() {
  const warnings: { message: string; meta?: Record<string, unknown> }[] = [];
  const logger: WarnLogger = {
    warn: (message, meta) => warnings.push({ message, ...(meta ? { meta } : {}) }),
  };
  return { logger, warnings };
}

const ann = (value: string) => ({ [IP_ALGO_ANNOTATION]: value, unrelated: 'x' });

describe('resolveIpAlgo', () => {
  it('lets the pod annotation win over the NodeConfig annotation', () => {
    const { logger, warnings } = recorder();
    expect(resolveIpAlgo(ann('stable'), ann('sequential'), logger)).toBe('stable');
    expect(warnings).toEqual([]);
  });

  it('falls through to the NodeConfig when the pod has no annotation', () => {
    const { logger, warnings } = recorder();
    expect(resolveIpAlgo(undefined, ann('sequential'), logger)).toBe('sequential');
    expect(resolveIpAlgo({ unrelated: 'x' }, ann('sequential'), logger)).toBe('sequential');
    expect(warnings).toEqual([]);
  });

  it('falls through silently on an empty or blank pod value', () => {
    const { logger, warnings } = recorder();
    expect(resolveIpAlgo(ann(''), ann('stable'), logger)).toBe('stable');
    expect(resolveIpAlgo(ann('   '), ann('stable'), logger)).toBe('stable');
    expect(warnings).toEqual([]);
  });

  it('falls through with one warning on an invalid pod value', () => {
    const { logger, warnings } = recorder();
    expect(resolveIpAlgo(ann('eui64'), ann('sequential'), logger)).toBe('sequential');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.message).toContain('"eui64"');
    expect(warnings[0]?.message).toContain('pod');
    expect(warnings[0]?.meta).toEqual({
      annotation: IP_ALGO_ANNOTATION,
      source: 'pod',
      value: 'eui64',
    });
  });

  it('falls back to random when both are absent, or the node has no annotations at all', () => {
    const { logger, warnings } = recorder();
    expect(resolveIpAlgo(undefined, undefined, logger)).toBe('random');
    expect(resolveIpAlgo({}, {}, logger)).toBe('random');
    expect(resolveIpAlgo(ann(''), undefined, logger)).toBe('random');
    expect(warnings).toEqual([]);
  });

  it('falls back to random with a warning naming the NodeConfig on an invalid node value', () => {
    const { logger, warnings } = recorder();
    expect(resolveIpAlgo(undefined, ann('Random'), logger)).toBe('random');
    expect(warnings.map((w) => w.meta)).toEqual([
      { annotation: IP_ALGO_ANNOTATION, source: 'NodeConfig', value: 'Random' },
    ]);
    expect(warnings[0]?.message).toContain('NodeConfig');
  });

  it('warns once per invalid source when both are invalid', () => {
    const { logger, warnings } = recorder();
    expect(resolveIpAlgo(ann('x'), ann('y'), logger)).toBe('random');
    expect(warnings.map((w) => [w.meta?.['source'], w.meta?.['value']])).toEqual([
      ['pod', 'x'],
      ['NodeConfig', 'y'],
    ]);
  });

  it('trims surrounding whitespace', () => {
    const { logger, warnings } = recorder();
    expect(resolveIpAlgo(ann('  sequential\n'), undefined, logger)).toBe('sequential');
    expect(resolveIpAlgo(undefined, ann('\tstable '), logger)).toBe('stable');
    expect(warnings).toEqual([]);
  });

  it('treats a duplicated or list value as invalid', () => {
    for (const value of ['stable,stable', 'random, sequential', 'stable stable', '["stable"]']) {
      const { logger, warnings } = recorder();
      expect(resolveIpAlgo(ann(value), ann('sequential'), logger), value).toBe('sequential');
      expect(warnings.map((w) => w.meta?.['value'])).toEqual([value]);
    }
  });
});
