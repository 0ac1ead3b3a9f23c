// externalTrafficPolicy Local: a node may take a Service's traffic only once kube-proxy on it
// delivers to a local endpoint. The EndpointSlice says an endpoint is ready; kube-proxy
// programs it a little later (its sync period). Announcing in between drops what arrives. The
// signal cloud load balancers use answers that: kube-proxy's health check of the Service
// (`spec.healthCheckNodePort`, on the node's addresses) says 200 once it has local endpoints.
// Routing asks it through an AnswerGate (answer-gate.ts), keyed by the health check port.
import { request } from 'node:http';
import { isIPv6 } from 'node:net';

/** Does kube-proxy on `address` have local endpoints for the Service of `port`? */
export type HealthCheck = (address: string, port: number) => Promise<boolean>;

/** GET http://[address]:port/ — kube-proxy answers 200 with local endpoints, 503 without. */
export const kubeProxyHealthCheck: HealthCheck = (address, port) =>
  new Promise((resolve) => {
    const req = request(
      {
        host: address,
        port,
        path: '/',
        method: 'GET',
        timeout: 1000,
        family: isIPv6(address) ? 6 : 4,
      },
      (res) => {
        res.resume();
        resolve(res.statusCode === 200);
      },
    );
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
    req.end();
  });

/** Does kube-proxy answer yes on any of `addresses` (the node's InternalIPs)? */
export async function anyAddressHealthy(
  check: HealthCheck,
  addresses: readonly string[],
  port: number,
): Promise<boolean> {
  for (const address of addresses) if (await check(address, port)) return true;
  return false;
}
