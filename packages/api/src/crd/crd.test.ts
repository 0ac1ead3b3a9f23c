import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { allCrds } from './definitions.js';
import { renderReference } from './reference.js';
import { renderCrds } from './render.js';
import { structuralViolations, toStructural } from './structural.js';

const repoCrds = join(import.meta.dirname, '..', '..', '..', '..', 'crds');

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const version = (crd: Obj): Obj => crd['spec']['versions'][0];
const crds = (): [string, Obj][] => allCrds();

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

  it.each(crds())('%s obeys the structural schema rules', (_file, crd) => {
    const schema = version(crd)['schema']['openAPIV3Schema'];
    expect(structuralViolations(schema)).toEqual([]);
    expect(JSON.stringify(schema)).not.toMatch(/"\$ref"|"additionalProperties":false|"const"/);
  });

  it.each(crds())('%s has a status subresource, short names and printer columns', (_file, crd) => {
    expect(version(crd)['subresources']).toEqual({ status: {} });
    expect(crd['spec']['names']['shortNames'].length).toBeGreaterThan(0);
    expect(version(crd)['additionalPrinterColumns'].map((c: Obj) => c['name'])).toContain('Ready');
  });

  it('carries CEL validations with messages, bounded for the cost estimator', () => {
    const text = JSON.stringify(crds());
    expect(text).toContain('isCIDR(self)');
    expect(text).toContain('self.cidr6 == oldSelf.cidr6');
    const [, pool] = crds()[1]!;
    const cidr =
      version(pool)['schema']['openAPIV3Schema']['properties']['spec']['properties']['ipv6'][
        'properties'
      ]['cidr'];
    expect(cidr['maxLength']).toBe(64);
    expect(cidr['x-kubernetes-validations'][0]['message']).toMatch(/IPv6 CIDR/);
  });

  it('keeps conditions mergeable by type under server-side apply', () => {
    for (const [, crd] of crds()) {
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
