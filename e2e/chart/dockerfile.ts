// Just enough of a Dockerfile reader for the chart's image tests: instructions by stage (line
// continuations joined as builders join them, comments dropped, ARG defaults substituted into FROM), and a way to run
// a build stage's `assemble` step against the repository's real build outputs.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { run } from '@flock/exec';
import { REPO } from './support.js';

export interface Instruction {
  op: string;
  text: string;
  /** The comment lines just above it. */
  comment: string;
}

export interface Stage {
  from: string;
  name?: string;
  instructions: Instruction[];
}

export function parseDockerfile(text: string): Stage[] {
  const args = new Map<string, string>();
  const stages: Stage[] = [];
  let comment: string[] = [];
  let current = '';
  const flush = () => {
    const line = current.trim();
    current = '';
    if (!line) return;
    const op = line.split(/\s+/, 1)[0]!.toUpperCase();
    const rest = line.slice(op.length).trim();
    const ins = { op, text: rest, comment: comment.join('\n') };
    comment = [];
    if (op === 'ARG' && stages.length === 0) {
      const [k, v] = rest.split('=', 2);
      if (k && v !== undefined) args.set(k, v);
      return;
    }
    if (op === 'FROM') {
      const [image = '', as, name] = rest.split(/\s+/);
      const from = image.replace(/\$\{(\w+)\}/g, (_, k: string) => args.get(k) ?? '');
      stages.push({
        from,
        ...(as?.toUpperCase() === 'AS' && name ? { name } : {}),
        instructions: [],
      });
      return;
    }
    stages.at(-1)?.instructions.push(ins);
  };
  for (const raw of text.split('\n')) {
    // As BuildKit and buildah read it: inside a continuation, blank and comment lines are
    // skipped, not an end (a stray trailing `\\` joins the next instruction into this one).
    if (current && (!raw.trim() || raw.trim().startsWith('#'))) continue;
    if (!current && raw.trim().startsWith('#')) {
      comment.push(raw.trim().replace(/^#\s?/, ''));
      continue;
    }
    if (raw.trimEnd().endsWith('\\')) current += raw.trimEnd().slice(0, -1) + ' ';
    else {
      current += raw;
      flush();
    }
  }
  flush();
  return stages;
}

export function finalStage(stages: Stage[]): Stage {
  const s = stages.at(-1);
  if (!s) throw new Error('no FROM');
  return s;
}

export function instructions(stage: Stage, op: string): Instruction[] {
  return stage.instructions.filter((i) => i.op === op);
}

/** ENTRYPOINT in exec (JSON) form. */
export function entrypoint(stage: Stage): string[] {
  const e = instructions(stage, 'ENTRYPOINT').at(-1);
  if (!e) throw new Error('no ENTRYPOINT');
  return JSON.parse(e.text) as string[];
}

/** COPY --from=STAGE SRC DEST of the final stage: image path prefix → build-stage path. */
export function copiesFromBuild(stage: Stage): { src: string; dest: string }[] {
  return instructions(stage, 'COPY')
    .map((i) => i.text.split(/\s+/).filter((w) => !w.startsWith('--chown')))
    .filter((w) => w[0]?.startsWith('--from='))
    .map((w) => ({ src: w[1] as string, dest: w[2] as string }));
}

/**
 * Run the build stage's `assemble` RUN (the step under a comment starting "assemble:") with
 * OUT=<dir>/out, in the repository itself, which looks like the build stage's /src: the
 * packages with their real dist/ outputs and an npm-installed node_modules (the step picks the
 * production dependencies out of it with `npm ls`). The step only reads there and writes under
 * OUT. Returns the OUT directory.
 */
export async function runAssemble(stages: Stage[], dir: string): Promise<string> {
  const build = stages.find((s) => s.name === 'build');
  const step = build?.instructions.find((i) => i.op === 'RUN' && /^assemble:/.test(i.comment));
  if (!step) throw new Error('the build stage has no RUN under an "assemble:" comment');
  const out = join(dir, 'out');
  await mkdir(dir, { recursive: true });
  await run('sh', ['-c', step.text], { cwd: REPO, env: { OUT: out }, timeoutMs: 60_000 });
  return out;
}
