import { describe, expect, it } from 'vitest';
import { requireTools, which } from './preflight.js';

describe('preflight', () => {
  it('finds tools on PATH', () => {
    expect(which('sh')).toMatch(/\/sh$/);
  });

  it('fails with what to install', () => {
    expect(() => requireTools('sh', 'bird-surely-missing')).toThrow(
      /bird-surely-missing \(install: bird-surely-missing\)/,
    );
  });
});
