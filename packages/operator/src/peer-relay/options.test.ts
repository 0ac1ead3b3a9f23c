import { describe, expect, it } from 'vitest';
import { parseRelayOptions } from './options.js';

const required = [
  '--tls-cert-file=/etc/r/tls.crt',
  '--tls-key-file=/etc/r/tls.key',
  '--allow-users=system:serviceaccount:flock-system:flock-agent,system:serviceaccount:x:y',
];

describe('flock-peer-relay settings', () => {
  it('reads the certificate, the readers and the defaults', () => {
    expect(parseRelayOptions(required, {})).toMatchObject({
      port: 5474,
      host: '',
      tlsCertFile: '/etc/r/tls.crt',
      allowUsers: ['system:serviceaccount:flock-system:flock-agent', 'system:serviceaccount:x:y'],
      maxLogEvents: 100_000,
      coalesce: 20,
      maxConnectionsPerSource: 16,
    });
    const many = parseRelayOptions([...required, '--max-connections-per-source=500'], {});
    expect(many.maxConnectionsPerSource).toBe(500);
    expect(() => parseRelayOptions([...required, '--max-connections-per-source=0'], {})).toThrow(
      /max-connections-per-source/,
    );
    expect(parseRelayOptions([...required, '--coalesce=0'], {}).coalesce).toBe(0);
    expect(parseRelayOptions([...required, '--coalesce=250ms'], {}).coalesce).toBe(250);
    expect(() => parseRelayOptions([...required, '--coalesce=2s'], {})).toThrow(/at most 1s/);
  });

  it('refuses to serve without TLS or without readers', () => {
    expect(() => parseRelayOptions(required.slice(1), {})).toThrow(/--tls-cert-file/);
    expect(() => parseRelayOptions(required.slice(0, 2), {})).toThrow(/--allow-users/);
    expect(() => parseRelayOptions([...required.slice(0, 2), '--allow-users=,'], {})).toThrow(
      /--allow-users/,
    );
    expect(() => parseRelayOptions([...required, '--tls-key-file=relative'], {})).toThrow(
      /--tls-key-file/,
    );
  });
});
