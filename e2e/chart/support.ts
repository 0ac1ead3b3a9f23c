// Shared by the chart's tests: where things are, `helm template` into parsed objects, and the
// containers of the rendered workloads.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { run } from '@flock/exec';
import { requireTools } from '@flock/testkit';
import { parseAllDocuments } from 'yaml';
import { z } from 'zod';

export const REPO = join(import.meta.dirname, '..', '..');
export const CHART = join(REPO, 'charts', 'flock');
export const GOLDEN = join(import.meta.dirname, '__golden__');
export const TESTDATA = join(import.meta.dirname, 'testdata');
export const RELEASE = 'flock';
export const NAMESPACE = 'flock-system';
/** UPDATE_GOLDEN=1 rewrites golden files (and the chart's CRD copy) instead of comparing. */
export const UPDATE = process.env['UPDATE_GOLDEN'] === '1';

export const K8sObject = z.looseObject({
  apiVersion: z.string(),
  kind: z.string(),
  metadata: z.looseObject({ name: z.string(), namespace: z.string().optional() }),
});
export type K8sObject = z.infer<typeof K8sObject>;

export const Container = z.looseObject({
  name: z.string(),
  image: z.string(),
  command: z.array(z.string()).optional(),
  args: z.array(z.string()).optional(),
  env: z
    .array(z.looseObject({ name: z.string(), value: z.string().optional() }))
    .optional()
    .default([]),
  volumeMounts: z
    .array(z.looseObject({ name: z.string(), mountPath: z.string() }))
    .optional()
    .default([]),
});
export type Container = z.infer<typeof Container>;

const PodTemplate = z.looseObject({
  spec: z.looseObject({
    template: z.looseObject({
      spec: z.looseObject({
        serviceAccountName: z.string(),
        containers: z.array(Container),
        initContainers: z.array(Container).optional().default([]),
        volumes: z
          .array(
            z.looseObject({
              name: z.string(),
              hostPath: z.object({ path: z.string(), type: z.string().optional() }).optional(),
            }),
          )
          .default([]),
      }),
    }),
  }),
});
export type PodTemplate = z.infer<typeof PodTemplate>;

/** `helm template` (text) with extra arguments such as ['-f', file] or ['--set', 'a=b']. */
export async function helmTemplate(extra: string[] = []): Promise<string> {
  requireTools('helm');
  const r = await run('helm', ['template', RELEASE, CHART, '--namespace', NAMESPACE, ...extra], {
    timeoutMs: 60_000,
  });
  return r.stdout;
}

/** The template that renders the upstream ClusterNetworkPolicy CRD (cnp-crd.test.ts checks it). */
export const CNP_CRD_SOURCE = 'flock/templates/clusternetworkpolicy-crd.yaml';

/**
 * `helm template` output without the documents of one template (`# Source: ...`): the golden
 * files leave out the 2,500-line upstream CRD, which is compared with its file instead.
 */
export function withoutSource(text: string, source: string): string {
  return text
    .split(/^(?=---\n)/m)
    .filter((doc) => !doc.includes(`# Source: ${source}\n`))
    .join('');
}

export function parseObjects(text: string): K8sObject[] {
  return parseAllDocuments(text)
    .map((d) => d.toJS() as unknown)
    .filter((o) => o !== null)
    .map((o) => K8sObject.parse(o));
}

export async function render(extra: string[] = []): Promise<K8sObject[]> {
  return parseObjects(await helmTemplate(extra));
}

export function find(objects: K8sObject[], kind: string, name: string): K8sObject {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`no ${kind} ${name} in the rendered chart`);
  return o;
}

export function podSpec(objects: K8sObject[], kind: string, name: string) {
  return PodTemplate.parse(find(objects, kind, name)).spec.template.spec;
}

export function container(containers: Container[], name: string): Container {
  const c = containers.find((x) => x.name === name);
  if (!c) throw new Error(`no container ${name}`);
  return c;
}

export function readRepo(...parts: string[]): string {
  return readFileSync(join(REPO, ...parts), 'utf8');
}
