import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { allCrds } from './definitions.js';
import { renderReference } from './reference.js';
import { KIND_NOTES } from './reference-notes.js';
import { invalidCases } from '../../testing/testdata.js';
import { renderCrds } from './render.js';
import { structuralViolations, toStructural } from './structural.js';

const repoCrds = join(import.meta.dirname, '..', '..', '..', '..', 'crds');

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const version = (crd: Obj): Obj => crd['spec']['versions'][0];
const crds = (): [string, Obj][] => allCrds();
const crdOf = (plural: string): Obj =>
  crds().find(([, c]) => c['spec']['names']['plural'] === plural)![1];
const schemaOf = (plural: string): Obj => version(crdOf(plural))['schema']['openAPIV3Schema'];

describe('generated CRDs', () => {
  it('crds/ holds exactly what the generator produces (run `npx nx run api:generate-crds`)', async () => {
    for (const [file, text] of renderCrds()) {
      expect(await readFile(join(repoCrds, file), 'utf8'), file).toBe(text);
    }
  });

  it('docs/reference.md is generated from the same schemas', async () => {
    const reference = await readFile(join(repoCrds, '..', 'docs', 'reference.md'), 'utf8');
    expect(reference).toBe(renderReference());
    expect(reference).toContain('cidr6 is immutable');
  });

  it('keeps to the CEL of Kubernetes 1.30, the oldest flock supports', () => {
    const rules = JSON.stringify(crds()).match(/"(rule|messageExpression)":"[^"]*"/g) ?? [];
    expect(rules.length).toBeGreaterThan(50);
    for (const r of rules) {
      // Two-variable comprehensions (1.32), ext.Lists (1.34), cel.bind (not served at all).
      expect(r).not.toMatch(
        /transformList|transformMap|\.flatten\(|cel\.bind|\.(all|exists|existsOne)\(\w+, \w+,/,
      );
      // A CEL reserved word as a field name must be escaped (__namespace__), else it is undefined.
      expect(r).not.toMatch(
        /\.(namespace|package|function|import|var|let|const|loop|while|for|if|else|return|break|continue|void|as|in)\b/,
      );
    }
  });

  it("quotes in the reference only messages the Pool's rules really give", () => {
    const notes = KIND_NOTES['Pool'] ?? '';
    const table = notes.slice(notes.indexOf('| rule |'), notes.indexOf('Overlaps with another'));
    const quoted = [...table.matchAll(/\| `([^`]+)` \|$/gm)];
    expect(quoted.length).toBe(8);
    const messages = invalidCases.map((c) => c.message);
    for (const [, text] of quoted) expect(messages).toContain(text);
  });

  it.each(crds())('%s obeys the structural schema rules', (_file, crd) => {
    const schema = version(crd)['schema']['openAPIV3Schema'];
    expect(structuralViolations(schema)).toEqual([]);
    expect(JSON.stringify(schema)).not.toMatch(/"\$ref"|"additionalProperties":false|"const"/);
  });

  it.each(crds())('%s has a status subresource, short names and printer columns', (_file, crd) => {
    expect(version(crd)['subresources']).toEqual({ status: {} });
    expect(crd['spec']['names']['shortNames'].length).toBeGreaterThan(0);
    expect(version(crd)['additionalPrinterColumns'].map((c: Obj) => c['name'])).toContain('Age');
  });

  it('shows a claim as kubectl get addressclaims (fclaim) should', () => {
    const claims = crdOf('addressclaims');
    expect(claims['spec']['names']['shortNames']).toEqual(['fclaim']);
    expect(
      version(claims)['additionalPrinterColumns'].map((c: Obj) => [c['name'], c['jsonPath']]),
    ).toEqual([
      ['Address', '.spec.address'],
      ['Kind', '.spec.kind'],
      ['Namespace', '.spec.namespace'],
      ['Key', '.spec.key'],
      ['Holder', '.spec.holders[0].pod'],
      ['Node', '.spec.holders[0].node'],
      ['Service', '.spec.services[0]'],
      ['Released', '.spec.releasedAt'],
      ['Age', '.metadata.creationTimestamp'],
    ]);
    for (const plural of ['pools', 'nodeconfigs']) {
      const columns = version(crdOf(plural))['additionalPrinterColumns'];
      expect(columns.map((c: Obj) => c['name'])).toContain('Ready');
    }
  });

  it("puts a claim's name rule on the root, where CEL sees metadata.name", () => {
    const rules = schemaOf('addressclaims')['x-kubernetes-validations'];
    expect(rules).toHaveLength(1);
    expect(rules[0]['rule']).toContain('self.metadata.name');
    expect(rules[0]['message']).toMatch(/^metadata.name must be the claimed address/);
    expect(schemaOf('pools')['x-kubernetes-validations']).toBeUndefined();
  });

  it('carries a message expression where the message names the values at fault', () => {
    const spec = schemaOf('pools')['properties']['spec'];
    const messages = spec['x-kubernetes-validations'].map((v: Obj) => v['messageExpression']);
    // Three pairs of lists, node ranges and peers per list, clusterIPs against four, the
    // translation prefix against the pods' IPv6 range and the NAT64 prefix.
    expect(messages).toHaveLength(15);
    expect(messages.every((m: unknown) => typeof m === 'string')).toBe(true);
    const within = spec['properties']['pinned']['x-kubernetes-validations'];
    expect(within.map((v: Obj) => v['fieldPath'])).toEqual(['.cidrs', '.grants', '.grants']);
    // Only Service grants may select Services: no such rule on the services list.
    const services = spec['properties']['services']['x-kubernetes-validations'];
    expect(services.map((v: Obj) => v['fieldPath'])).toEqual(['.cidrs', '.grants']);
    // A withRules over a withRules keeps both: the grammar of a range and its width.
    const item = spec['properties']['anycast']['properties']['cidrs']['items'];
    expect(item['x-kubernetes-validations'].map((v: Obj) => v['rule'])).toEqual([
      'isCIDR(self)',
      '!isCIDR(self) || cidr(self).ip() == cidr(self).masked().ip()',
      expect.stringContaining('prefixLength() >= (cidr(self).ip().family() == 6 ? 48 : 16)'),
    ]);
  });

  it('carries CEL validations with messages, bounded for the cost estimator', () => {
    const text = JSON.stringify(crds());
    expect(text).toContain('isCIDR(self)');
    expect(text).toContain('self.cidr6 == oldSelf.cidr6');
    const cidr =
      schemaOf('pools')['properties']['spec']['properties']['ipv6']['properties']['cidr'];
    expect(cidr['maxLength']).toBe(64);
    expect(cidr['x-kubernetes-validations'][0]['message']).toMatch(/IPv6 CIDR/);
  });

  it('keeps conditions mergeable by type under server-side apply', () => {
    for (const crd of [crdOf('pools'), crdOf('nodeconfigs')]) {
      const conditions =
        version(crd)['schema']['openAPIV3Schema']['properties']['status']['properties'][
          'conditions'
        ];
      expect(conditions['x-kubernetes-list-type']).toBe('map');
      expect(conditions['x-kubernetes-list-map-keys']).toEqual(['type']);
    }
  });

  it('rejects constructs the API server would refuse', () => {
    expect(() => toStructural({ type: 'object', properties: { a: { $ref: '#/x' } } })).toThrow(
      /\$ref/,
    );
    expect(() => toStructural({ anyOf: [{ type: 'string' }] })).toThrow(/anyOf/);
    expect(() => toStructural({ properties: {} })).toThrow(/needs a type/);
    expect(toStructural({ type: 'object', additionalProperties: false })).toEqual({
      type: 'object',
    });
    expect(structuralViolations({ type: ['string', 'null'] })).toEqual(['$: type is an array']);
  });
});
