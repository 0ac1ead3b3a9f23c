import { mkdir, readFile, readdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AllocationStore, AllocationStoreError } from './allocation-store.js';
import type { NewAllocationEntry } from './schema.js';
import {
  NOW,
  codeOf,
  entry,
  failing,
  loadedStore,
  tempStoreDir,
} from '../../testing/allocation-store.js';

const disk = tempStoreDir();

const loaded = (options: Parameters<typeof loadedStore>[1] = {}) => loadedStore(disk.path, options);

describe('AllocationStore', () => {
  it('treats a missing file as an empty store and refuses use before load', async () => {
    const store = new AllocationStore(disk.path);
    expect(() => store.entries()).toThrow(/has not been loaded/);
    expect(await codeOf(store.putPending(entry('a')))).toBe('NotLoaded');
    await store.load();
    expect(store.entries()).toEqual([]);
  });

  it('goes pending → committed → removed, each step on disk', async () => {
    const store = await loaded();
    const pending = await store.putPending(entry('a', { anycast: ['2001:db8:ac::1'] }));
    expect(pending).toMatchObject({ state: 'pending', createdAt: '2026-11-29T12:00:00.000Z' });
    const onDisk = () =>
      readFile(disk.path, 'utf8').then(
        (t) => JSON.parse(t) as { version: number; entries: { state: string }[] },
      );
    expect(await onDisk()).toEqual({ version: 1, entries: [pending], released: [] });
    expect((await store.commit('a', 'eth0')).state).toBe('committed');
    expect((await onDisk()).entries.map((e) => e.state)).toEqual(['committed']);
    expect(await store.remove('a', 'eth0')).toBe(true);
    expect(await store.remove('a', 'eth0')).toBe(false);
    expect(await onDisk()).toEqual({ version: 1, entries: [], released: [] });
  });

  it('keeps released addresses from the first write of a DEL, reloads them, and drops them once expired', async () => {
    let now = NOW;
    const store = await loaded({ now: () => now });
    for (const e of [entry('a'), entry('b', { ip6: '2001:db8::2', ip4: undefined })]) {
      await store.putPending(e);
      await store.commit(e.containerID, 'eth0');
    }
    const until = (ms: number) => new Date(NOW + ms).toISOString();
    const released = [
      { ip: '2001:db8::1', identity: 'default/pod-a', pinned: false, until: until(60_000) },
      { ip: '192.0.2.1', identity: 'default/pod-a', pinned: false, until: until(60_000) },
    ];
    expect(await store.markPending('a', 'eth0', released)).toMatchObject({ state: 'pending' });
    expect(store.released()).toEqual(released);
    // A crash here: the next start reads them back, with the pending entry.
    const again = new AllocationStore(disk.path, { now: () => now });
    await again.load();
    expect(again.released()).toEqual(released);
    expect(await again.remove('a', 'eth0')).toBe(true);
    expect(again.released()).toEqual(released);
    now = NOW + 60_000;
    expect(again.released()).toEqual([]);
    // The next write prunes them from the file.
    await again.markPending('b', 'eth0', [
      { ip: '2001:db8::2', identity: 'default/pod-b', pinned: true, until: until(120_000) },
    ]);
    const onDisk = JSON.parse(await readFile(disk.path, 'utf8')) as { released: { ip: string }[] };
    expect(onDisk.released.map((r) => r.ip)).toEqual(['2001:db8::2']);
  });

  it('a store written under a clock that ran ahead: entries no younger than the load, quarantines no longer than one from it', async () => {
    const ahead = NOW + 365 * 24 * 3_600_000;
    const early = await loaded({ now: () => ahead });
    await early.putPending(entry('a'));
    await early.commit('a', 'eth0');
    const far = new Date(ahead + 60_000).toISOString();
    await early.markPending('a', 'eth0', [
      { ip: '2001:db8::1', identity: 'default/pod-a', pinned: false, until: far },
    ]);
    // The node reboots with the right time.
    const store = new AllocationStore(disk.path, { now: () => NOW, maxQuarantineMs: 30_000 });
    await store.load();
    expect(store.entries()[0]!.createdAt).toBe(new Date(NOW).toISOString());
    expect(store.released()).toEqual([
      {
        ip: '2001:db8::1',
        identity: 'default/pod-a',
        pinned: false,
        until: new Date(NOW + 30_000).toISOString(),
      },
    ]);
    // What was in the past stays as it was.
    const later = new AllocationStore(disk.path, { now: () => ahead + 1, maxQuarantineMs: 30_000 });
    await later.load();
    expect(later.entries()[0]!.createdAt).toBe(new Date(ahead).toISOString());
  });

  it('refuses a released address that is not canonical, and changes nothing then', async () => {
    const store = await loaded();
    await store.putPending(entry('a'));
    await store.commit('a', 'eth0');
    const bad = {
      ip: '2001:DB8::01',
      identity: 'default/a',
      pinned: false,
      until: '2026-11-29T13:00:00.000Z',
    };
    expect(await codeOf(store.markPending('a', 'eth0', [bad]))).toBe('Invalid');
    expect(store.get('a', 'eth0')?.state).toBe('committed');
  });

  it('reads a store file without a released list (written by an older agent)', async () => {
    await mkdir(join(disk.dir, 'state'), { recursive: true });
    await writeFile(disk.path, JSON.stringify({ version: 1, entries: [] }));
    const store = await loaded();
    expect(store.released()).toEqual([]);
  });

  it('marks a committed entry pending again on disk (two-phase DEL), idempotently', async () => {
    const store = await loaded();
    await store.putPending(entry('a'));
    await store.commit('a', 'eth0');
    expect((await store.markPending('a', 'eth0'))?.state).toBe('pending');
    expect(await store.markPending('a', 'eth0')).toMatchObject({ state: 'pending' });
    expect(await store.markPending('b', 'eth0')).toBeUndefined();
    const again = new AllocationStore(disk.path);
    await again.load();
    expect(again.entries().map((e) => e.state)).toEqual(['pending']);
  });

  it('reloads exactly what it wrote', async () => {
    const store = await loaded();
    await store.putPending(entry('a'));
    await store.putPending(entry('b', { ifname: 'net1', ip4: undefined, pinned: true }));
    await store.commit('a', 'eth0');
    const again = await loaded();
    expect(again.entries()).toEqual(store.entries());
    expect(again.get('b', 'net1')).toMatchObject({ pinned: true, state: 'pending' });
    expect(again.get('b', 'eth0')).toBeUndefined();
  });

  it('creates the file 0600 in a directory created 0700', async () => {
    const store = await loaded();
    await store.putPending(entry('a'));
    expect((await stat(disk.path)).mode & 0o777).toBe(0o600);
    expect((await stat(join(disk.dir, 'state'))).mode & 0o777).toBe(0o700);
    expect(await readdir(join(disk.dir, 'state'))).toEqual(['allocations.json']);
  });

  it('refuses a second entry for the same container and interface', async () => {
    const store = await loaded();
    await store.putPending(entry('a'));
    expect(await codeOf(store.putPending(entry('a', { ip6: '2001:db8::2' })))).toBe('Exists');
    expect(await codeOf(store.putPending(entry('a', { ifname: 'net1' })))).toBe('resolved');
  });

  it('commits idempotently and refuses to commit what does not exist', async () => {
    const { fs, state } = failing('rename', 'EIO');
    state.armed = false;
    const store = await loaded({ fileSystem: fs });
    await store.putPending(entry('a'));
    await store.commit('a', 'eth0');
    const writes = state.calls.length;
    expect((await store.commit('a', 'eth0')).state).toBe('committed');
    expect(state.calls.length).toBe(writes);
    expect(await codeOf(store.commit('b', 'eth0'))).toBe('NotFound');
  });

  it('validates entries: canonical addresses, CNI container IDs, Linux interface names', async () => {
    const store = await loaded();
    const invalid: Partial<NewAllocationEntry>[] = [
      { ip6: '2001:DB8::1' },
      { ip6: '2001:db8:0::1' },
      { ip6: '192.0.2.1' },
      { ip4: '2001:db8::1' },
      { containerID: '-abc' },
      { containerID: 'a/b' },
      { containerID: '' },
      { ifname: 'abcdefghijklmnop' },
      { ifname: 'eth:0' },
      { ifname: 'eth 0' },
      { ifname: 'a/b' },
      { ifname: '..' },
      { ifname: '' },
      { namespace: 'Default' },
      { pod: 'Pod_1' },
      { podUID: '' },
      { anycast: ['2001:db8::a', '2001:db8::a'] },
      { anycast: ['2001:0db8::a'] },
      { communities: ['65000:0100'] },
      { communities: ['65000:100', '65000:100'] },
      { communities: ['70000:1'] },
    ];
    for (const bad of invalid) {
      expect(await codeOf(store.putPending(entry('a', bad))), JSON.stringify(bad)).toBe('Invalid');
    }
    expect(
      await codeOf(store.putPending(entry('A1_b.c-d', { ifname: 'net-1.2_x', pod: 'web-0.a' }))),
    ).toBe('resolved');
  });

  it('says a corrupt file is corrupt and leaves it in place', async () => {
    const cases = [
      ['{"version":1,"entries":[', /not JSON/],
      ['{"version":1,"entries":[{"containerID":"a"}]}', /ifname/],
      ['{"version":0,"entries":[]}', /format version 0, this version of flock reads version 1/],
      ['null', /corrupt/],
    ] as const;
    await mkdir(join(disk.dir, 'state'), { recursive: true });
    for (const [text, detail] of cases) {
      await writeFile(disk.path, text);
      const store = new AllocationStore(disk.path);
      const error = await store.load().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AllocationStoreError);
      expect((error as AllocationStoreError).code).toBe('Corrupt');
      expect((error as Error).message).toMatch(detail);
      expect((error as Error).message).toContain('left in place');
      expect((error as Error).message).toContain(`${disk.path}.previous`);
      expect(await readFile(disk.path, 'utf8')).toBe(text);
    }
  });

  it('keeps the state a run starts from as PATH.previous; a newer format stops the agent, saying so', async () => {
    const store = await loaded();
    await store.putPending(entry('a'));
    await store.commit('a', 'eth0');
    const committed = await readFile(disk.path, 'utf8');
    await new AllocationStore(disk.path).load(); // the next run
    expect(await readFile(`${disk.path}.previous`, 'utf8')).toBe(committed);
    // A newer flock wrote format 2, then was rolled back: refused, both files left alone.
    const newer = '{"version":2,"entries":[],"later":"field"}';
    await writeFile(disk.path, newer);
    const error = (await new AllocationStore(disk.path).load().catch((e: unknown) => e)) as Error;
    expect((error as AllocationStoreError).code).toBe('NewerVersion');
    expect(error.message).toMatch(
      /written by a newer flock agent \(format version 2; this version reads version 1\)/,
    );
    expect(error.message).toContain(`${disk.path}.previous`);
    expect(await readFile(disk.path, 'utf8')).toBe(newer);
    expect(await readFile(`${disk.path}.previous`, 'utf8')).toBe(committed);
  });

  it('a store that can be read loads even when its previous generation cannot be written (a full disk)', async () => {
    const store = await loaded();
    await store.putPending(entry('a'));
    const { fs } = failing('writeFile', 'ENOSPC');
    const again = new AllocationStore(disk.path, { fileSystem: fs });
    await again.load();
    expect(again.entries().map((e) => e.containerID)).toEqual(['a']);
    expect(again.previousGenerationError).toMatch(/cannot keep the previous generation .*ENOSPC/);
  });

  it('refuses a file with the same entry twice', async () => {
    const store = await loaded();
    const a = await store.putPending(entry('a'));
    await writeFile(disk.path, JSON.stringify({ version: 1, entries: [a, a] }));
    expect(await codeOf(new AllocationStore(disk.path).load())).toBe('Corrupt');
  });

  it('returns copies: callers cannot change the store by mutating results', async () => {
    const store = await loaded();
    const put = await store.putPending(
      entry('a', { anycast: ['2001:db8:ac::1'], communities: ['65000:1:2'] }),
    );
    put.anycast.push('2001:db8:ac::2');
    put.communities?.push('65000:1');
    store.entries()[0]?.anycast.push('2001:db8:ac::3');
    store.entries()[0]?.communities?.push('65000:2');
    expect(store.get('a', 'eth0')).toMatchObject({
      anycast: ['2001:db8:ac::1'],
      communities: ['65000:1:2'],
    });
  });
});
