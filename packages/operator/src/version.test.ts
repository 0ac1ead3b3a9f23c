import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { OPERATOR_FLAGS } from './options.js';
import { operatorVersion } from './version.js';

describe('flock-operator --version', () => {
  it('is the package version, and --help says so', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    expect(operatorVersion()).toBe(pkg.version);
    expect(operatorVersion()).toMatch(/^\d+\.\d+\.\d+/);
    const usage = OPERATOR_FLAGS.usage();
    expect(usage).toMatch(/^ {2}--version +print the version and exit$/m);
    expect(usage).toMatch(/^ {2}--help +print this and exit$/m);
  });
});
