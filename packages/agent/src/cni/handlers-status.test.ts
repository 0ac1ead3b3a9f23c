// CNI STATUS.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { handlers, make, setNode, setUp, tearDown } from '../../testing/cni-handlers.js';

beforeEach(setUp);
afterEach(tearDown);

describe('CNI STATUS', () => {
  it('STATUS is 50 until the node is ready', async () => {
    setNode(undefined);
    expect(handlers.status()).toMatchObject({ ok: false, error: { code: 50 } });
    make({ ready: () => false });
    expect(handlers.status()).toMatchObject({ ok: false, error: { code: 50 } });
  });
});
