import { describe, expect, it } from 'vitest';
import { describeNotes } from './turn-notes.js';

describe("a bench turn's notes", () => {
  it('lists the deleted routes by node and time, and the warnings with the message of the unusual ones', () => {
    const t0 = Date.parse('2026-12-03T16:00:00Z');
    const line = describeNotes(
      {
        deleted: [
          {
            at: t0 + 25_600,
            deleted: true,
            prefix: '2001:db8:100:2::/64',
            via: 'fd00::2',
            node: 'lab-node-3',
          },
        ],
        warnings: new Map([
          ['Unhealthy', { count: 52, message: 'Readiness probe failed: connection refused' }],
          [
            'FailedCreatePodSandBox',
            { count: 7, message: 'plugin type="flock" failed (add): timeout' },
          ],
        ]),
      },
      t0,
    );
    expect(line).toBe(
      'router deleted 1 route(s): lab-node-3 2001:db8:100:2::/64 at +25.6 s; pod warnings: Unhealthy ×52, ' +
        'FailedCreatePodSandBox ×7 (plugin type="flock" failed (add): timeout)',
    );
  });

  it('says so when nothing happened', () => {
    expect(describeNotes({ deleted: [], warnings: new Map() }, 0)).toBe(
      'router deleted no route; pod warnings: none',
    );
  });
});
