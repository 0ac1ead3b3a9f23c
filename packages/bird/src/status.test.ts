import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseReplies, type BirdReply } from './reply.js';
import {
  parseBfdSessions,
  parseProtocolRow,
  parseProtocols,
  parseProtocolsAll,
  peerStatuses,
  routeCounts,
} from './status.js';

/** The one reply in a file recorded from a real BIRD 2.0.12. */
function recordedReply(name: string): BirdReply {
  const [reply] = parseReplies(
    readFileSync(join(import.meta.dirname, '__fixtures__', 'replies', `${name}.txt`), 'utf8'),
  );
  if (!reply) throw new Error(`no reply in ${name}`);
  return reply;
}

describe('show protocols', () => {
  it('reads the rows of a node (timeformat iso long)', () => {
    const rows = parseProtocols(recordedReply('show-protocols-node'));
    expect(rows.map((r) => r.name)).toEqual([
      'flock_device',
      'flock_aggregates6',
      'flock_aggregates4',
      'peer_2001_db8_ffff__1',
      'peer_203_0_113_1',
    ]);
    expect(rows[3]).toEqual({
      name: 'peer_2001_db8_ffff__1',
      proto: 'BGP',
      table: '---',
      state: 'up',
      since: '2026-11-29 19:36:06',
      info: 'Established',
    });
    expect(rows[0]?.info).toBe('');
  });

  it('reads the rows of a router whose peers are down (default timeformat)', () => {
    const rows = parseProtocols(recordedReply('show-protocols-router-down'));
    expect(rows.find((r) => r.name === 'node6')).toEqual({
      name: 'node6',
      proto: 'BGP',
      table: '---',
      state: 'start',
      since: '19:36:11.429',
      info: 'Active        Socket: Connection refused',
    });
    expect(rows.find((r) => r.name === 'node4')).toMatchObject({ state: 'down', info: '' });
  });

  it('refuses a row it cannot read', () => {
    expect(() => parseProtocolRow('just-a-name')).toThrow(/unreadable protocol row/);
  });
});

describe('show protocols all', () => {
  it('reads BGP details and per-channel route counts', () => {
    const all = parseProtocolsAll(recordedReply('show-protocols-all-node'));
    expect(all.map((p) => p.name)).toHaveLength(5);
    const v6 = all.find((p) => p.name === 'peer_2001_db8_ffff__1');
    expect(v6).toMatchObject({
      bgpState: 'Established',
      neighborAddress: '2001:db8:ffff::1',
      neighborAs: 65000,
      localAs: 65001,
      sourceAddress: '2001:db8:ffff::2',
    });
    expect(v6?.channels).toEqual([
      {
        name: 'ipv6',
        state: 'UP',
        table: 'master6',
        inputFilter: 'REJECT',
        outputFilter: 'flock_export6',
        imported: 0,
        exported: 2,
        preferred: 0,
      },
      expect.objectContaining({
        name: 'ipv4',
        table: 'master4',
        outputFilter: 'flock_export4',
        exported: 2,
      }),
    ]);
    expect(routeCounts(v6!)).toEqual({ imported: 0, exported: 4, preferred: 0 });
    const statics = all.find((p) => p.name === 'flock_aggregates6');
    expect(routeCounts(statics!)).toEqual({ imported: 3, exported: 0, preferred: 3 });
    expect(all.find((p) => p.name === 'flock_device')?.channels).toEqual([]);
  });

  it('reads the last error of a session that is not up', () => {
    const [node6] = parseProtocolsAll(recordedReply('show-protocols-all-active'));
    expect(node6).toMatchObject({
      name: 'node6',
      bgpState: 'Active',
      lastError: 'Socket: Connection refused',
    });
    expect(node6?.channels.map((c) => c.state)).toEqual(['DOWN', 'DOWN']);
  });
});

describe('show bfd sessions', () => {
  it('reads a session that is up with the timers in force', () => {
    expect(parseBfdSessions(recordedReply('show-bfd-sessions-up'))).toEqual([
      {
        protocol: 'flock_bfd',
        address: '203.0.113.1',
        interface: 'vnode',
        state: 'Up',
        since: '2026-12-01 20:42:04',
        intervalMs: 100,
        timeoutMs: 300,
      },
    ]);
  });

  it('reads a session that went down (no packets from the peer)', () => {
    expect(parseBfdSessions(recordedReply('show-bfd-sessions-down'))).toEqual([
      expect.objectContaining({ address: '203.0.113.1', state: 'Down', intervalMs: 1000 }),
    ]);
  });
});

describe('peerStatuses', () => {
  it('maps BIRD protocols back to the peers by protocol name', () => {
    const all = parseProtocolsAll(recordedReply('show-protocols-all-node'));
    const peers = [
      { address: '2001:DB8:FFFF::1', asn: 65000 },
      { address: '203.0.113.1', asn: 65000 },
      { address: '2001:db8:ffff::9', asn: 65009 },
    ];
    expect(peerStatuses(peers, all)).toEqual([
      {
        address: '2001:DB8:FFFF::1',
        asn: 65000,
        protocol: 'peer_2001_db8_ffff__1',
        state: 'Established',
        since: '2026-11-29 19:36:06',
        routesExported: 4,
      },
      {
        address: '203.0.113.1',
        asn: 65000,
        protocol: 'peer_203_0_113_1',
        state: 'Established',
        since: '2026-11-29 19:36:07',
        routesExported: 2,
      },
      {
        address: '2001:db8:ffff::9',
        asn: 65009,
        protocol: 'peer_2001_db8_ffff__9',
        state: 'NotConfigured',
      },
    ]);
  });

  it('reports the state and error of a session that is not up', () => {
    const all = parseProtocolsAll(recordedReply('show-protocols-all-active'));
    const [status] = peerStatuses(
      [{ address: '2001:db8:ffff::2', asn: 65001 }],
      [{ ...all[0]!, name: 'peer_2001_db8_ffff__2' }],
    );
    expect(status).toMatchObject({
      state: 'Active',
      info: 'Socket: Connection refused',
      routesExported: 0,
    });
  });
});
