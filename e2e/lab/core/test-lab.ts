// The lab a cluster-tier test file runs against: one call registers the file's beforeAll (the
// tools checked, a temporary directory, the lab up, the file's own setup) and its afterAll (the
// lab down, the directory removed). For *.cluster.test.ts only (it calls vitest's hooks).
import { randomBytes } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { silentLogger } from '@flock/kube';
import { requireKernelTier } from '@flock/testkit';
import { afterAll, beforeAll } from 'vitest';
import { Lab, type LabOptions } from './lab.js';

export interface TestLabOptions extends Omit<LabOptions, 'dir' | 'log'> {
  /** The temporary directory's name: this and a random suffix (`flock-lab-it-`). */
  tmpPrefix: string;
  /** What the test needs beyond what Lab.up checks itself (kubectl, helm, ...). */
  tools?: string[];
  /** The lab's directory inside the temporary one (default: the temporary directory itself). */
  labSubdir?: string;
  /** After up, before the tests (the workloads they expect). */
  setup?: (lab: Lab) => Promise<unknown>;
}

/** The lab (up once beforeAll has run) and the file's temporary directory. */
export function startLab(o: TestLabOptions): { lab: Lab; dir: string } {
  const { tmpPrefix, tools = [], labSubdir, setup, ...options } = o;
  const dir = join(tmpdir(), `${tmpPrefix}${randomBytes(4).toString('hex')}`);
  const lab = new Lab({
    ...options,
    dir: labSubdir ? join(dir, labSubdir) : dir,
    log: silentLogger,
  });
  let made = false;
  beforeAll(async () => {
    requireKernelTier(...tools);
    await mkdir(dir);
    made = true;
    await lab.up();
    await setup?.(lab);
  }, 600_000);
  afterAll(async () => {
    if (!made) return;
    await lab.down();
    await rm(dir, { recursive: true, force: true });
  });
  return { lab, dir };
}
