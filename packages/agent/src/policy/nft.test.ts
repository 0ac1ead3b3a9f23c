import { describe, expect, it } from 'vitest';
import { netnsName } from './nft.js';

describe('netnsName', () => {
  it('takes the name of a named namespace path', () => {
    expect(netnsName('/run/netns/node-1a2b3c')).toBe('node-1a2b3c');
    expect(netnsName('/var/run/netns/cni-1234')).toBe('cni-1234');
  });

  it('refuses paths nft cannot be run in by name, and anything that could smuggle arguments', () => {
    for (const bad of [
      '/proc/1/ns/net',
      '/run/netns/',
      '/run/netns/a/b',
      '/run/netns/-x',
      'node',
    ]) {
      expect(() => netnsName(bad)).toThrow(/named namespace/);
    }
  });
});
