// The rooms of e2e/lab depend one way (e2e/README.md): a room imports only from itself and the
// rooms before it in ORDER (core/ and node/ build the lab together: one step). cli.ts, `npm run
// lab`, may use every room. Outside the lab only shared/: the chart's and the images' tests never
// import the lab, nor the lab them.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { describe, expect, it } from 'vitest';

const ORDER = [
  ['core', 'node'],
  ['probes'],
  ['conformance'],
  ['cnp-conformance'],
  ['bench'],
  ['scenarios'],
];
const allowed: Record<string, string[]> = Object.fromEntries(
  ORDER.flatMap((step, i) => step.map((room) => [room, ORDER.slice(0, i + 1).flat()])),
);

const E2E = resolve(import.meta.dirname, '..');

/** Where a file of e2e/ is: `lab/ROOM`, `lab` (its top: cli.ts), or e2e's folder (chart, shared). */
function place(file: string): string {
  const [top, room, more] = relative(E2E, file).split(sep);
  return top === 'lab' && more !== undefined ? `lab/${room}` : top!;
}

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => join(e.parentPath, e.name));
}

/** Every relative import of e2e's TypeScript (tests included), as `from -> to` places. */
const edges = ['lab', 'chart', 'images', 'shared'].flatMap((dir) =>
  tsFiles(join(E2E, dir)).flatMap((file) =>
    [...readFileSync(file, 'utf8').matchAll(/(?:from|import\()\s*'(\.{1,2}\/[^']+)'/g)].map(
      (m) => ({
        file: relative(E2E, file),
        from: place(file),
        to: place(resolve(dirname(file), m[1]!)),
      }),
    ),
  ),
);

describe('rooms of e2e/lab', () => {
  it.each(Object.keys(allowed))('lab/%s imports only from the rooms before it', (room) => {
    const wrong = edges.filter(
      (e) =>
        e.from === `lab/${room}` &&
        e.to !== 'shared' &&
        !allowed[room]!.map((r) => `lab/${r}`).includes(e.to),
    );
    expect(wrong).toEqual([]);
  });

  it('keeps the lab and the chart apart: what both need is in shared/', () => {
    const inLab = (p: string) => p === 'lab' || p.startsWith('lab/');
    const wrong = edges.filter(
      (e) =>
        (inLab(e.from) && !inLab(e.to) && e.to !== 'shared') ||
        (!inLab(e.from) && inLab(e.to)) ||
        (e.from === 'shared' && e.to !== 'shared'),
    );
    expect(wrong).toEqual([]);
  });

  it('has a room for every folder of lab/', () => {
    const folders = readdirSync(import.meta.dirname, { withFileTypes: true })
      .filter((d) => d.isDirectory())
      .map((d) => d.name);
    expect(folders.sort()).toEqual(Object.keys(allowed).sort());
  });
});
