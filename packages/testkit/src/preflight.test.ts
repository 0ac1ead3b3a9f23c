import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CNI_PLUGINS, cniPluginsDir, requireTools, which } from './preflight.js';

const path = process.env['PATH'];
afterEach(() => {
  process.env['PATH'] = path;
});

describe('preflight', () => {
  it('finds tools on PATH', () => {
    expect(which('sh')).toMatch(/\/sh$/);
  });

  it('fails with what to install', () => {
    expect(() => requireTools('sh', 'bird-surely-missing')).toThrow(
      /bird-surely-missing \(install: bird-surely-missing\)/,
    );
  });

  it('finds the reference CNI plugins in a cni-plugins directory next to PATH entries', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'flock-preflight-'));
    try {
      const plugins = join(dir, 'bin', 'cni-plugins');
      await mkdir(plugins, { recursive: true });
      for (const p of CNI_PLUGINS.filter((p) => p !== 'sbr')) {
        await writeFile(join(plugins, p), '#!/bin/sh\n');
        await chmod(join(plugins, p), 0o755);
      }
      process.env['PATH'] = `/nonexistent:${join(dir, 'bin')}`;
      expect(cniPluginsDir('bandwidth')).toBe(plugins);
      expect(() => cniPluginsDir()).toThrow(/scripts\/build-cni-plugins\.sh/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
