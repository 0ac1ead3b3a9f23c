// Speaking to 0.4.0, 1.0.0 and 1.1.0 callers. The agent works in 1.1.0 only; the plugin
// converts its results down to the caller's version and previous results up to 1.1.0.
import { CNI_VERSIONS, type AgentCommand, type CniResult, type CniVersion } from '@flock/api';

export function isSupportedVersion(v: unknown): v is CniVersion {
  return typeof v === 'string' && (CNI_VERSIONS as readonly string[]).includes(v);
}

/** The first spec version that defines each command: STATUS and GC arrived in 1.1.0. */
const FIRST_VERSION: Record<AgentCommand, CniVersion> = {
  ADD: '0.4.0',
  DEL: '0.4.0',
  CHECK: '0.4.0',
  STATUS: '1.1.0',
  GC: '1.1.0',
};

/** Whether a caller speaking `version` may send `command` (libcni answers code 1 when not). */
export function commandAllowed(command: AgentCommand, version: CniVersion): boolean {
  return CNI_VERSIONS.indexOf(version) >= CNI_VERSIONS.indexOf(FIRST_VERSION[command]);
}

/**
 * An ADD result (1.1.0 form) in the caller's version: 1.0.0 has no interface `mtu`; 0.4.0 has
 * no interface `mtu` either and tags each IP with `"version": "4"|"6"`.
 */
export function resultForVersion(result: CniResult, version: CniVersion): Record<string, unknown> {
  const { cniVersion: _ignored, interfaces, ips, ...rest } = result;
  const out: Record<string, unknown> = { cniVersion: version };
  if (interfaces)
    out['interfaces'] =
      version === '1.1.0' ? interfaces : interfaces.map(({ mtu: _mtu, ...i }) => i);
  if (ips)
    out['ips'] =
      version === '0.4.0'
        ? ips.map((ip) => ({ version: ip.address.includes(':') ? '6' : '4', ...ip }))
        : ips;
  return { ...out, ...rest };
}

/**
 * A `prevResult` (DEL/CHECK) in 1.1.0 form, so that the agent reads one shape whatever the
 * caller's version: 0.4.0's per-IP `version` is dropped (the address says it).
 */
export function prevResultForAgent(prev: Record<string, unknown>): Record<string, unknown> {
  const ips = prev['ips'];
  if (!Array.isArray(ips)) return { ...prev, cniVersion: '1.1.0' };
  return {
    ...prev,
    cniVersion: '1.1.0',
    ips: ips.map((ip: unknown) => {
      if (typeof ip !== 'object' || ip === null) return ip;
      const { version: _version, ...rest } = ip as Record<string, unknown>;
      return rest;
    }),
  };
}
