// The Dockerfile reader joins lines as the builders do, so the image tests see what they build.
import { describe, expect, it } from 'vitest';
import { instructions, parseDockerfile } from './dockerfile.js';

describe('parseDockerfile', () => {
  it('ends an instruction at its last continuation, skipping blank and comment lines inside', () => {
    const stages = parseDockerfile(
      [
        'ARG BASE=node:24-slim',
        'FROM ${BASE} AS build',
        'RUN a; \\',
        '    # a comment inside',
        '    b',
        '',
        'FROM ${BASE}',
        'COPY --from=build /out /opt',
      ].join('\n'),
    );
    expect(stages.map((s) => [s.from, s.name])).toEqual([
      ['node:24-slim', 'build'],
      ['node:24-slim', undefined],
    ]);
    expect(instructions(stages[0]!, 'RUN').map((r) => r.text)).toEqual(['a;      b']);
  });

  it('joins the next instruction into a RUN that ends in a stray continuation, as buildah does', () => {
    const stages = parseDockerfile(['FROM a AS build', 'RUN x; \\', '', 'FROM b'].join('\n'));
    expect(stages).toHaveLength(1);
    expect(instructions(stages[0]!, 'RUN')[0]!.text).toBe('x;  FROM b');
  });
});
