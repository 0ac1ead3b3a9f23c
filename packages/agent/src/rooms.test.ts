// The rooms of src/ depend one way (README.md, "Rooms"): a production file imports only from its
// own room and the rooms of earlier tiers; rooms of one tier never import each other. agent.ts,
// agent-deps.ts, main.ts and index.ts (the top) may import any room.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const TIERS = [
  ['core'],
  ['cni-server', 'datapath', 'store', 'nat64'],
  ['node'],
  ['claims'],
  ['cni'],
  ['routing', 'policy'],
  ['node-status'],
  ['status'],
];
const allowed: Record<string, string[]> = Object.fromEntries(
  TIERS.flatMap((tier, i) => tier.map((room) => [room, [...TIERS.slice(0, i).flat(), room]])),
);

function imports(room: string): string[] {
  const dir = join(import.meta.dirname, room);
  return readdirSync(dir)
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
    .flatMap((f) =>
      [...readFileSync(join(dir, f), 'utf8').matchAll(/from '\.\.\/([a-z-]+)[/.]/g)].map(
        (m) => `${room}/${f} -> ${m[1]}`,
      ),
    );
}

describe('rooms of @flock/agent', () => {
  it.each(Object.keys(allowed))('%s imports only from its own room and earlier tiers', (room) => {
    const wrong = imports(room).filter((edge) => !allowed[room]!.includes(edge.split(' -> ')[1]!));
    expect(wrong).toEqual([]);
  });

  it('has a room for every folder of src/, and only agent.ts, agent-deps.ts, main.ts and index.ts above them', () => {
    const entries = readdirSync(import.meta.dirname, { withFileTypes: true });
    const folders = entries.filter((d) => d.isDirectory()).map((d) => d.name);
    expect(folders.sort()).toEqual(Object.keys(allowed).sort());
    const files = entries
      .filter((d) => d.isFile() && d.name.endsWith('.ts') && !d.name.endsWith('.test.ts'))
      .map((d) => d.name);
    expect(files.sort()).toEqual(['agent-deps.ts', 'agent.ts', 'index.ts', 'main.ts']);
  });
});
