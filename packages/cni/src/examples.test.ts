// examples/10-flock.conflist is what the agent image ships and the chart installs on every node
// (images/agent/Dockerfile): kept as a file to be read in review, and held to @flock/api's
// flockConflist() here so that the builder the tests and the lab use cannot drift from it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { flockConflist } from '@flock/api';

const EXAMPLE = join(import.meta.dirname, '..', 'examples', '10-flock.conflist');

describe('examples/10-flock.conflist', () => {
  it('is flockConflist() with its defaults', () => {
    const expected = flockConflist();
    expect(
      JSON.parse(readFileSync(EXAMPLE, 'utf8')),
      `${EXAMPLE} should be:\n${JSON.stringify(expected, null, 2)}\n`,
    ).toEqual(expected);
  });
});
