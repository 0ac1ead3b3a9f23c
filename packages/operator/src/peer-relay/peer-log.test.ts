import { RelayEvent, type PeerPod } from '@flock/api';
import { describe, expect, it } from 'vitest';
import { LogOverrun, PeerLog, sliceRecords, type SliceRecords } from './peer-log.js';

const rec = (name: string, ip = '2001:db8::1', labels: Record<string, string> = {}): PeerPod => ({
  name,
  uid: `uid-${name}`,
  node: 'n2',
  ips: [ip],
  labels,
});
const slice = (name: string, ns: string, pods: PeerPod[]): SliceRecords =>
  sliceRecords(name, ns, pods);
const parse = (lines: string) =>
  lines
    .split('\n')
    .filter(Boolean)
    .map((l) => RelayEvent.parse(JSON.parse(l)));

/** The records a stream of lines leaves an agent with, starting from `state`. */
function replay(lines: Iterable<string>, state = new Map<string, PeerPod>()) {
  for (const e of parse([...lines].join(''))) {
    if (e.t === 'put') state.set(`${e.ns}/${e.pod.name}`, e.pod);
    if (e.t === 'del') state.delete(`${e.ns}/${e.name}`);
  }
  return state;
}

describe('PeerLog', () => {
  it('logs a slice change as the records that changed, and nothing for an unchanged one', () => {
    const log = new PeerLog();
    const got: string[] = [];
    log.subscribe((l) => got.push(l));
    const a = slice('s1', 'a', [rec('web'), rec('db', '2001:db8::2')]);
    log.applySlice(undefined, a);
    expect(parse(got.join('')).map((e) => e.t)).toEqual(['put', 'put']);
    got.length = 0;
    // One pod's label changes, the other is as it was: one put; the same slice again: nothing.
    const b = slice('s1', 'a', [rec('web', '2001:db8::1', { v: '2' }), rec('db', '2001:db8::2')]);
    log.applySlice(a, b);
    log.applySlice(b, b);
    expect(parse(got.join(''))).toEqual([
      { t: 'put', seq: 3, ns: 'a', pod: rec('web', '2001:db8::1', { v: '2' }) },
    ]);
    got.length = 0;
    log.applySlice(b, undefined);
    expect(parse(got.join('')).map((e) => [e.t, 'seq' in e ? e.seq : 0])).toEqual([
      ['del', 4],
      ['del', 5],
    ]);
    expect(log.size).toBe(0);
  });

  it('keeps a pod that moves between slices, whichever slice is written first', () => {
    for (const order of ['new-first', 'old-first']) {
      const log = new PeerLog();
      const s1 = slice('s1', 'a', [rec('web'), rec('db')]);
      const s2 = slice('s2', 'a', [rec('api')]);
      log.applySlice(undefined, s1);
      log.applySlice(undefined, s2);
      const s1b = slice('s1', 'a', [rec('web')]);
      const s2b = slice('s2', 'a', [rec('api'), rec('db', '2001:db8::9')]);
      const lines: string[] = [];
      log.subscribe((l) => lines.push(l));
      if (order === 'new-first') {
        log.applySlice(s2, s2b);
        log.applySlice(s1, s1b);
      } else {
        log.applySlice(s1, s1b);
        log.applySlice(s2, s2b);
      }
      const state = replay(log.snapshot());
      expect([...state.keys()].sort(), order).toEqual(['a/api', 'a/db', 'a/web']);
      expect(state.get('a/db')?.ips, order).toEqual(['2001:db8::9']);
      // Old first: the pod was gone a moment (a del, then a put); new first: one put.
      expect(
        parse(lines.join('')).map((e) => e.t),
        order,
      ).toEqual(order === 'new-first' ? ['put'] : ['del', 'put']);
    }
  });

  it('gives an agent the changes after its position while the log holds them, else nothing', () => {
    const log = new PeerLog(3);
    const s = (v: string) => slice('s1', 'a', [rec('web', '2001:db8::1', { v })]);
    log.applySlice(undefined, s('1'));
    const agent = replay(log.snapshot());
    const at = log.seq;
    log.applySlice(s('1'), s('2'));
    log.applySlice(s('2'), s('3'));
    const resumed = [...(log.since(log.epoch, at) ?? [])];
    expect(parse(resumed[0] as string)[0]).toEqual({
      t: 'begin',
      epoch: log.epoch,
      full: false,
      seq: at,
    });
    expect(replay(resumed, agent).get('a/web')?.labels).toEqual({ v: '3' });
    expect(log.since('00000000-other', at)).toBeUndefined();
    expect(log.since(log.epoch, log.seq + 1)).toBeUndefined();
    log.applySlice(s('3'), s('4'));
    log.applySlice(s('4'), s('5'));
    // Three changes kept: position 1 needs changes 2..5, and 2 is gone.
    expect(log.since(log.epoch, at)).toBeUndefined();
    expect([...(log.since(log.epoch, log.seq - 3) ?? [])]).toHaveLength(4);
  });

  it('writes a snapshot every agent can read back exactly', () => {
    const log = new PeerLog();
    log.applySlice(undefined, slice('s1', 'a', [rec('web'), rec('db', '10.0.0.1')]));
    log.applySlice(undefined, slice('s2', 'b', [rec('web', '2001:db8::7', { 'x/y': 'z"q' })]));
    const lines = [...log.snapshot()];
    const events = parse(lines.join(''));
    expect(events[0]).toMatchObject({ t: 'begin', full: true, seq: 3 });
    expect(events.at(-1)).toEqual({ t: 'synced', seq: 3 });
    expect(replay(lines).get('b/web')?.labels).toEqual({ 'x/y': 'z"q' });
  });

  it('makes a snapshot as it is read: changes meanwhile, sent after it, leave the agent exact', () => {
    const log = new PeerLog();
    const pods = (v: string) => ['p0', 'p1', 'p2', 'p3'].map((n) => rec(n, '2001:db8::1', { v }));
    const first = slice('s1', 'a', pods('1'));
    log.applySlice(undefined, first);
    const later: string[] = [];
    log.subscribe((l) => later.push(l));
    const reading = log.snapshot();
    const begun = [reading.next().value as string, reading.next().value as string];
    expect(parse(begun[0] as string)[0]).toMatchObject({ t: 'begin', seq: 4 });
    // While it is read: p1 deleted, p2 changed, p0 (read already) changed, p4 added.
    const second = slice('s1', 'a', [
      rec('p0', '2001:db8::1', { v: '2' }),
      rec('p2', '2001:db8::1', { v: '2' }),
      rec('p3', '2001:db8::1', { v: '1' }),
      rec('p4'),
    ]);
    log.applySlice(first, second);
    const rest = [...reading];
    expect(parse(rest.at(-1) as string)[0]).toEqual({ t: 'synced', seq: 4 });
    // The agent applies the snapshot, then the changes after its position (4).
    const agent = replay([...begun, ...rest, ...later]);
    expect(agent).toEqual(replay(log.snapshot()));
    expect([...agent.keys()].sort()).toEqual(['a/p0', 'a/p2', 'a/p3', 'a/p4']);
  });

  it('a resuming reader the log moved past fails instead of skipping changes', () => {
    const log = new PeerLog(2);
    const s = (v: string) => slice('s1', 'a', [rec('web', '2001:db8::1', { v })]);
    log.applySlice(undefined, s('1'));
    log.applySlice(s('1'), s('2'));
    const reading = log.since(log.epoch, 0);
    expect(reading?.next().value).toContain('"begin"');
    log.applySlice(s('2'), s('3'));
    log.applySlice(s('3'), s('4'));
    expect(() => reading?.next()).toThrow(LogOverrun);
  });
});
