// The rooms of src/ depend one way (README.md, "Rooms"): a production file imports only from its
// own room and the rooms before it in ORDER; `process` only from `core`.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ORDER = ['core', 'transport', 'informer', 'control', 'api', 'flock'];
const allowed: Record<string, string[]> = {
  ...Object.fromEntries(ORDER.map((room, i) => [room, ORDER.slice(0, i + 1)])),
  process: ['core', 'process'],
};

function imports(room: string): string[] {
  const dir = join(import.meta.dirname, room);
  return readdirSync(dir)
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
    .flatMap((f) =>
      [...readFileSync(join(dir, f), 'utf8').matchAll(/from '\.\.\/([a-z-]+)\//g)].map(
        (m) => `${room}/${f} -> ${m[1]}`,
      ),
    );
}

describe('rooms of @flock/kube', () => {
  it.each(Object.keys(allowed))('%s imports only from the rooms before it', (room) => {
    const wrong = imports(room).filter((edge) => !allowed[room]!.includes(edge.split(' -> ')[1]!));
    expect(wrong).toEqual([]);
  });

  it('has a room for every folder of src/', () => {
    const folders = readdirSync(import.meta.dirname, { withFileTypes: true })
      .filter((d) => d.isDirectory() && d.name !== 'bench')
      .map((d) => d.name);
    expect(folders.sort()).toEqual(Object.keys(allowed).sort());
  });
});
