// CNI CHECK.
import { CniErrorCode } from '@flock/api';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { hostVethName } from '../datapath/index.js';
import { datapath, handlers, request, setUp, tearDown } from '../../testing/cni-handlers.js';

beforeEach(setUp);
afterEach(tearDown);

describe('CNI CHECK', () => {
  it('CHECK passes on a healthy pod and reports a deleted route', async () => {
    await handlers.handle(request('ADD'));
    expect(await handlers.handle(request('CHECK'))).toEqual({ ok: true });
    const veth = hostVethName('c1', 'eth0');
    datapath.tamperHost([
      {
        op: 'route-del',
        step: 'host-routes',
        route: {
          dst: '2001:db8:100::1/128',
          type: 'unicast',
          proto: 241,
          nexthops: [{ dev: veth }],
        },
      },
    ]);
    const r = await handlers.handle(request('CHECK'));
    expect(r).toMatchObject({
      ok: false,
      error: { msg: expect.stringContaining('2001:db8:100::1') },
    });
    expect(await handlers.handle(request('CHECK', { containerID: 'unknown' }))).toMatchObject({
      ok: false,
      error: { code: CniErrorCode.UnknownContainer },
    });
  });
});
