// The transport connects to the API server directly: it speaks no HTTP CONNECT. A proxy that
// the environment asks for must not be ignored silently (traffic would bypass a proxy the
// operator relies on, or fail in ways that do not say why), so loading credentials refuses it,
// naming the variable — unless the proxy would not apply to this server anyway, by the rules
// of Go's http.ProxyFromEnvironment that kubectl and client-go follow: the scheme's variable
// (HTTPS_PROXY / https_proxy, HTTP_PROXY / http_proxy), never for localhost or a loopback
// address, and not for a host NO_PROXY / no_proxy exempts.
import { BlockList, isIP } from 'node:net';

/** Why the environment's proxy settings cannot be honoured for `server`; undefined: they need not be. */
export function proxyRefusal(server: string, env: NodeJS.ProcessEnv): string | undefined {
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    return undefined; // the transport says what is wrong with the server
  }
  const https = url.protocol === 'https:';
  const names = https ? ['HTTPS_PROXY', 'https_proxy'] : ['HTTP_PROXY', 'http_proxy'];
  const name = names.find((n) => env[n]);
  if (!name) return undefined;
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  const port = url.port || (https ? '443' : '80');
  if (isLoopback(host)) return undefined;
  const noProxyName = ['NO_PROXY', 'no_proxy'].find((n) => env[n]);
  if (noProxyName && exempt(host, port, env[noProxyName] as string)) return undefined;
  return (
    `${name} is set, but this client connects to the API server directly and does not support ` +
    `proxies: unset ${name} for this process, or add ${host} to NO_PROXY`
  );
}

function isLoopback(host: string): boolean {
  if (host === 'localhost') return true;
  if (isIP(host) === 4) return host.startsWith('127.');
  return host === '::1';
}

/** Does a NO_PROXY list exempt host:port? ("*", IPs, CIDRs, domains, each with an optional port) */
function exempt(host: string, port: string, noProxy: string): boolean {
  const family = isIP(host);
  for (const raw of noProxy.split(',')) {
    let entry = raw.trim().toLowerCase();
    if (!entry) continue;
    if (entry === '*') return true;
    if (entry.includes('/')) {
      const [net, bits] = entry.split('/') as [string, string];
      const type = isIP(net);
      if (!family || type !== family || !/^\d+$/.test(bits)) continue;
      const list = new BlockList();
      try {
        list.addSubnet(net, Number(bits), type === 6 ? 'ipv6' : 'ipv4');
      } catch {
        continue;
      }
      if (list.check(host, family === 6 ? 'ipv6' : 'ipv4')) return true;
      continue;
    }
    let entryPort = '';
    const hostPort = /^\[(.+)\](?::(\d+))?$/.exec(entry) ?? /^([^:]+):(\d+)$/.exec(entry);
    if (hostPort) [, entry, entryPort = ''] = hostPort as unknown as [string, string, string?];
    if (entryPort && entryPort !== port) continue;
    if (isIP(entry)) {
      if (family && equalAddresses(entry, host)) return true;
      continue;
    }
    // "foo.com" is that name and its subdomains; ".foo.com" and "*.foo.com" only subdomains.
    const domain = entry.startsWith('*.') ? entry.slice(1) : entry;
    if (
      domain.startsWith('.')
        ? host.endsWith(domain)
        : host === domain || host.endsWith(`.${domain}`)
    )
      return true;
  }
  return false;
}

function equalAddresses(a: string, b: string): boolean {
  const family = isIP(a);
  if (family !== isIP(b)) return false;
  const list = new BlockList();
  list.addAddress(a, family === 6 ? 'ipv6' : 'ipv4');
  return list.check(b, family === 6 ? 'ipv6' : 'ipv4');
}
