import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readFileIfExists, writeFileAtomic } from './atomic-file.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'flock-atomic-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('writeFileAtomic', () => {
  it('creates the file with mode 0600 whatever the umask, and leaves no temp file', async () => {
    const path = join(dir, 'bird.conf');
    const old = process.umask(0);
    try {
      await writeFileAtomic(path, 'router id 192.0.2.1;\n');
    } finally {
      process.umask(old);
    }
    expect(readFileSync(path, 'utf8')).toBe('router id 192.0.2.1;\n');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readdirSync(dir)).toEqual(['bird.conf']);
  });

  it('replaces an existing file and its mode', async () => {
    const path = join(dir, 'bird.conf');
    writeFileSync(path, 'old', { mode: 0o644 });
    await writeFileAtomic(path, 'new');
    expect(readFileSync(path, 'utf8')).toBe('new');
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it('removes its temp file when the rename fails', async () => {
    mkdirSync(join(dir, 'bird.conf'));
    writeFileSync(join(dir, 'bird.conf', 'inside'), '');
    await expect(writeFileAtomic(join(dir, 'bird.conf'), 'x')).rejects.toThrow(/EISDIR|ENOTEMPTY/);
    expect(readdirSync(dir)).toEqual(['bird.conf']);
  });
});

describe('readFileIfExists', () => {
  it('reads a file, and gives undefined for a missing one', async () => {
    writeFileSync(join(dir, 'a'), 'content');
    expect(await readFileIfExists(join(dir, 'a'))).toBe('content');
    expect(await readFileIfExists(join(dir, 'b'))).toBeUndefined();
  });
});
