import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CommandError, run } from '@flock/exec';
import { Netns, requireKernelTier } from '@flock/testkit';
import { NftApplier, check, nftRunner } from './apply.js';
import { parseState, renderState, renderTable, tableScript, translate } from './index.js';
import { arbitraryState } from '../testing/arbitrary.js';
import { local, namespace, pod, policy, state } from '../testing/builders.js';

const CLI = fileURLToPath(new URL('../dist/src/cli.js', import.meta.url));

const sample = (port: number) =>
  state({
    namespaces: [namespace('x')],
    pods: [
      pod('x/a', { app: 'a' }, ['10.0.0.1', 'fd00::1']),
      pod('x/b', { app: 'b' }, ['10.0.0.2']),
    ],
    policies: [
      policy('x/p', {
        podSelector: { matchLabels: { app: 'a' } },
        ingress: [{ from: [{ podSelector: {} }], ports: [{ port, endPort: port + 10 }] }],
      }),
    ],
    local: [local('x/a', 'flock00000001')],
  });

describe('nft: apply, check and the CLI (kernel)', () => {
  let ns: Netns;
  let dir: string;
  const listTable = async () => (await ns.exec('nft', ['list', 'table', 'inet', 'flock'])).stdout;
  beforeAll(async () => {
    requireKernelTier('nft');
    ns = await Netns.create('npnft');
    dir = mkdtempSync(join(tmpdir(), 'flock-netpol-'));
  });
  afterAll(async () => {
    await ns?.destroy();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the kernel takes the rate-limited log of dropped packets (logDroppedPerSecond)', async () => {
    const table = renderTable(translate(parseState(sample(80))), { logDroppedPerSecond: 3 });
    await nftRunner({ netns: ns.name })(tableScript(table));
    expect(await listTable()).toMatch(
      /limit rate 3\/second burst 6 packets log prefix "flock-drop ingress x\/a: " level info\n\s*counter packets 0 bytes 0 drop/,
    );
  });

  it('applies through nft -f, skips an unchanged script and replaces sets on change', async () => {
    let calls = 0;
    const real = nftRunner({ netns: ns.name });
    const applier = new NftApplier(async (s) => {
      calls++;
      await real(s);
    });
    expect(await applier.apply(renderState(sample(80)))).toBe(true);
    expect(await listTable()).toContain('tcp . 80-90');
    expect(await applier.apply(renderState(sample(80)))).toBe(false);
    expect(calls).toBe(1);
    expect(await applier.apply(renderState(sample(1000)))).toBe(true);
    const table = await listTable();
    expect(table).toContain('tcp . 1000-1010');
    expect(table).not.toContain('tcp . 80-90');
  });

  it('a script nft refuses changes nothing (one transaction)', async () => {
    const good = renderState(sample(80));
    await nftRunner({ netns: ns.name })(good);
    const before = await listTable();
    const broken = `${good}add rule inet flock forward meta nosuchthing accept\n`;
    await expect(nftRunner({ netns: ns.name })(broken)).rejects.toBeInstanceOf(CommandError);
    await expect(check(broken, { netns: ns.name })).rejects.toBeInstanceOf(CommandError);
    expect(await listTable()).toBe(before);
  });

  it('nft -c accepts every script the property test renders', async () => {
    await fc.assert(
      fc.asyncProperty(arbitraryState(), async (raw) => {
        await check(renderState(raw), { netns: ns.name });
      }),
      { numRuns: 150 },
    );
  });

  it('flock-netpol render prints the script, apply applies it, bad input names object and field', async () => {
    const file = join(dir, 'state.json');
    writeFileSync(file, JSON.stringify(sample(443)));
    const rendered = await run(process.execPath, [CLI, 'render', file]);
    expect(rendered.stdout).toBe(renderState(sample(443)));
    await ns.exec(process.execPath, [CLI, 'apply', file]);
    expect(await listTable()).toContain('tcp . 443-453');

    const bad = sample(443);
    (
      bad.policies as unknown as { spec: { ingress: { ports: unknown[] }[] } }[]
    )[0]!.spec.ingress[0]!.ports = [{ port: 'http', endPort: 9 }];
    writeFileSync(file, JSON.stringify(bad));
    let stderr = '';
    try {
      execFileSync(process.execPath, [CLI, 'render', file], { stdio: 'pipe' });
    } catch (e) {
      stderr = String((e as { stderr: Buffer }).stderr);
    }
    expect(stderr).toContain(
      'networkpolicy x/p: spec.ingress[0].ports[0].endPort: endPort needs a numeric port',
    );
  });
});
