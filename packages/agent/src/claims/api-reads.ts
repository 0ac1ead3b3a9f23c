// What the claim protocol reads from the API server beside the claims: a namespace's labels
// (grants select namespaces by label) and whether a Node is Ready (a terminating holder on a
// node that is not Ready cannot be announcing its address: the routers dropped the node).
import { CniErrorCode } from '@flock/api';
import {
  NAMESPACES,
  NODES,
  formatFieldSelector,
  isNotFound,
  objectPath,
  resourceListWatch,
  type KubeTransport,
} from '@flock/kube';
import { z } from 'zod';
import { CniCommandError } from '../core/cni-error.js';
import type { NamespaceRef } from './grants.js';

const Namespace = z.looseObject({
  metadata: z.looseObject({
    name: z.string(),
    labels: z.record(z.string(), z.string()).optional(),
  }),
});

/**
 * A namespace's labels from the API server (a list by name: the agent may list and watch
 * namespaces, not get them); a namespace that does not exist has none.
 */
export async function fetchNamespace(
  transport: KubeTransport,
  name: string,
): Promise<NamespaceRef> {
  try {
    const page = await resourceListWatch(transport, NAMESPACES).list({
      fieldSelector: formatFieldSelector({ 'metadata.name': name }),
    });
    const ns = page.items.map((i) => Namespace.parse(i)).find((n) => n.metadata.name === name);
    return { name, labels: ns?.metadata.labels ?? {} };
  } catch (error) {
    throw new CniCommandError(
      CniErrorCode.TryAgainLater,
      `cannot read namespace ${name} (${error instanceof Error ? error.message : String(error)}); try again later`,
    );
  }
}

const Node = z.looseObject({
  status: z
    .looseObject({
      conditions: z.array(z.looseObject({ type: z.string(), status: z.string() })).optional(),
    })
    .optional(),
});

/** Is the Node Ready now? undefined when there is no such Node. Throws when it cannot tell. */
export async function fetchNodeReady(
  transport: KubeTransport,
  name: string,
): Promise<boolean | undefined> {
  try {
    const node = Node.parse(
      await transport.request({ method: 'GET', path: objectPath(NODES, name) }),
    );
    return node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw new CniCommandError(
      CniErrorCode.TryAgainLater,
      `cannot read node ${name} (${error instanceof Error ? error.message : String(error)}); try again later`,
    );
  }
}
