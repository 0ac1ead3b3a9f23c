import { silentLogger } from '@flock/api';
import { nodeConfig } from '@flock/api/testing';
import { describe, expect, it } from 'vitest';
import { Blackholes } from './blackholes.js';

/** Blackholes over a node whose NodeConfig is `spec`, recording what it asks the datapath for. */
function blackholesOf(spec: NonNullable<Parameters<typeof nodeConfig>[0]>['spec']) {
  const asked: string[][] = [];
  const nc = nodeConfig({ spec });
  const b = new Blackholes({
    datapath: {
      ensureBlackholes: async (cidrs: string[]) => {
        asked.push(cidrs);
        return { added: cidrs, removed: [] };
      },
    },
    nodeConfig: { current: () => ({ nodeConfig: nc }) as never },
    periodMs: 60_000,
    logger: silentLogger,
  });
  return { b, asked };
}

describe('the blackhole summary routes', () => {
  it("cover the node's prefixes; a Private pool's whole range too, so nothing of it leaves unNATed", async () => {
    const publicNode = blackholesOf({ cidr4: '192.0.2.16/28' });
    await publicNode.b.start();
    await publicNode.b.stop();
    expect(publicNode.asked[0]).toEqual(['2001:db8:100::/64', '192.0.2.16/28']);

    const privateNode = blackholesOf({
      cidr4: '10.20.3.0/24',
      ipv4: { assign: 'Always', mode: 'Private', clusterCIDRs: ['10.20.0.0/16'] },
    });
    await privateNode.b.start();
    await privateNode.b.stop();
    expect(privateNode.asked[0]).toEqual(['2001:db8:100::/64', '10.20.3.0/24', '10.20.0.0/16']);
  });

  it('keep a Private range blackholed with a translation prefix too (the fallback of its halves)', async () => {
    const translated = blackholesOf({
      cidr4: '10.20.3.0/24',
      ipv4: {
        assign: 'Always',
        mode: 'Private',
        clusterCIDRs: ['10.20.0.0/16'],
        interNodePrefix: 'fd12:3456:789a:4::/96',
      },
    });
    await translated.b.start();
    await translated.b.stop();
    expect(translated.asked[0]).toEqual(['2001:db8:100::/64', '10.20.3.0/24', '10.20.0.0/16']);
  });
});
