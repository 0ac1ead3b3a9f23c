// The router configurations docs/announcements.md gives ("The router's configuration"), parsed
// by the programs that would run them: BIRD (`bird -p`) and FRR (`vtysh --dryrun`: Debian's frr
// unpacked by scripts/fetch-frr.sh, not installed, because installing it would start FRR's
// daemons on the machine).
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '@flock/exec';
import { requireTools } from '@flock/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from './plan.js';

let dir: string;
let blocks: { lang: string; text: string }[];

beforeAll(async () => {
  const doc = await readFile(join(REPO_ROOT, 'docs', 'announcements.md'), 'utf8');
  const section = doc.slice(doc.indexOf("### The router's configuration"));
  blocks = [...section.matchAll(/```(\w*)\n([\s\S]*?)```/g)].map((m) => ({
    lang: m[1]!,
    text: m[2]!,
  }));
  dir = await mkdtemp(join(tmpdir(), 'flock-router-samples-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe("docs/announcements.md's router samples", () => {
  it('BIRD parses its sample; the sample filters what nodes announce and bounds each session', async () => {
    requireTools('bird');
    const bird = blocks.find((b) => b.lang === 'conf')!.text;
    expect(bird).toMatch(/import filter from_flock6; import limit \d+ action block;/);
    expect(bird).toMatch(/import filter from_flock4; import limit \d+ action block;/);
    expect(bird).not.toMatch(/import all/);
    const file = join(dir, 'bird.conf');
    // A router id and the device protocol, as any router has around its sessions.
    await writeFile(file, `router id 10.0.0.1;\nprotocol device {}\n${bird}`);
    const parsed = await run('bird', ['-p', '-c', file]).then(
      () => 'ok',
      (e: unknown) => String((e as { stderr?: string }).stderr ?? e),
    );
    expect(parsed).toBe('ok');
    // The check can fail: a wrong action is refused.
    await writeFile(file, `router id 10.0.0.1;\n${bird.replace('action block', 'action later')}`);
    await expect(run('bird', ['-p', '-c', file])).rejects.toThrow();
  });

  it('FRR parses its sample (vtysh --dryrun); prefix lists in and a maximum-prefix on both families', async () => {
    requireTools('vtysh');
    const frr = blocks.find((b) => b.lang === '' && b.text.includes('router bgp'))!.text;
    for (const family of ['FLOCK-IN4', 'FLOCK-IN6'])
      expect(frr).toContain(`neighbor FLOCK prefix-list ${family} in`);
    expect(frr.match(/maximum-prefix \d+ warning-only/g)).toHaveLength(2);
    const file = join(dir, 'frr.conf');
    await writeFile(file, frr);
    await run('vtysh', ['--dryrun', '-f', file]);
    await writeFile(file, frr.replace('maximum-prefix 2000', 'maximum-prefix lots'));
    await expect(run('vtysh', ['--dryrun', '-f', file])).rejects.toThrow();
  });

  it("docs/install.md's edge filter (BCP 38) is valid nftables, dropping the cluster's sources from upstream", async () => {
    requireTools('nft', 'unshare');
    const doc = await readFile(join(REPO_ROOT, 'docs', 'install.md'), 'utf8');
    const section = doc.slice(doc.indexOf('## The network edge'));
    const edge = /```\n\s*(table inet edge[\s\S]*?)```/.exec(section)?.[1];
    expect(edge).toMatch(/iifname "upstream" ip6 saddr @cluster6 drop/);
    expect(edge).toMatch(/iifname "upstream" ip saddr @cluster4 drop/);
    const file = join(dir, 'edge.nft');
    // nft -c only checks; in a network namespace of its own all the same.
    const check = () => run('unshare', ['--net', 'nft', '-c', '-f', file]);
    await writeFile(file, edge!);
    await check();
    await writeFile(file, edge!.replace('2001:db8:100::/56', '2001:db8:100::/529'));
    await expect(check()).rejects.toThrow();
  });
});
