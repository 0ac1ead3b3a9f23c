// AddressClaim examples shared by the schema tests and the CRD tests on a real API server: a
// valid pinned and anycast claim, and invalid ones with the message a user sees. A claim's
// name is its address (claimName), so the cases carry their object names.
import { claimName, HOLDERS_UNIQUE, SERVICES_UNIQUE } from '../src/address-claim.js';
import { ADDRESSCLAIM_KIND, API_VERSION } from '../src/names.js';
import type { InvalidCase } from './testdata.js';

export const PINNED_ADDRESS = '2001:db8:200::10';
export const ANYCAST_ADDRESS = '203.0.113.53';

export const validPinnedClaimSpec = () => ({
  address: PINNED_ADDRESS,
  kind: 'Pinned',
  namespace: 'default',
  key: 'Deployment/web',
  holders: [{ node: 'node-a', pod: 'web-5d9c-x7k2p', uid: '6f1c1a52-3b1e-4c52-9d43-0f1b2c3d4e5f' }],
});

export const validAnycastClaimSpec = () => ({
  address: ANYCAST_ADDRESS,
  kind: 'Anycast',
  namespace: 'dns',
  key: 'Deployment/resolver',
  holders: [{ node: 'node-a' }, { node: 'node-b' }],
});

export const SERVICE_ADDRESS = '2001:db8:400::1';

/** Two Services sharing one address (the sharing key of the annotation). */
export const validServiceClaimSpec = () => ({
  address: SERVICE_ADDRESS,
  kind: 'Service',
  namespace: 'default',
  key: 'web-shared',
  services: ['web-http', 'web-dns'],
});

/** The same address after its last Service let it go: its quarantine. */
export const releasedServiceClaimSpec = () => ({
  address: SERVICE_ADDRESS,
  kind: 'Service',
  namespace: 'default',
  key: 'web-shared',
  services: [],
  releasedAt: '2030-01-01T00:00:00Z',
});

/** A whole AddressClaim, named after its address unless `name` says otherwise. */
export const claimObject = <S extends { address: string }>(
  spec: S,
  name = claimName(spec.address),
) => ({
  apiVersion: API_VERSION,
  kind: ADDRESSCLAIM_KIND,
  metadata: { name },
  spec,
});

type ClaimSpec = ReturnType<typeof validPinnedClaimSpec> & Record<string, unknown>;

const claim = (
  name: string,
  edit: (s: ClaimSpec) => void,
  message: string,
  objectName?: string,
  apiServerMessage?: string,
): InvalidCase => {
  const spec = validPinnedClaimSpec() as ClaimSpec;
  edit(spec);
  return {
    name,
    kind: 'AddressClaim',
    spec,
    message,
    objectName: objectName ?? claimName(spec.address),
    ...(apiServerMessage ? { apiServerMessage } : {}),
  };
};

const NAME_MESSAGE = 'metadata.name must be the claimed address';

export const invalidClaimCases: InvalidCase[] = [
  claim('claim named after another address', () => {}, NAME_MESSAGE, claimName('2001:db8:200::11')),
  claim('claim named in a shortened spelling', () => {}, NAME_MESSAGE, '2001-db8-200--10'),
  claim('IPv4 claim named otherwise', (s) => (s.address = '192.0.2.7'), NAME_MESSAGE, '192.0.2.8'),
  claim(
    'claim of something that is not an address',
    (s) => (s.address = '2001:db8::zz'),
    'address must be an IPv4 or IPv6 address',
    'not-an-address',
  ),
  claim(
    'Pinned claim with two holders',
    (s) => s.holders.push({ node: 'node-b', pod: 'web-2', uid: 'u2' }),
    'a Pinned claim has at most one holder, and it names its pod and uid',
  ),
  claim(
    'Pinned holder without its pod',
    (s) => (s.holders = [{ node: 'node-a' } as never]),
    'a Pinned claim has at most one holder, and it names its pod and uid',
  ),
  claim(
    'Anycast holder naming a pod',
    (s) => (s.kind = 'Anycast'),
    'an Anycast claim lists nodes only (no pod, uid or withdrawn)',
  ),
  claim(
    'Anycast claim naming a node twice',
    (s) => {
      s.kind = 'Anycast';
      s.holders = [{ node: 'node-a' }, { node: 'node-a' }] as never;
    },
    HOLDERS_UNIQUE,
    undefined,
    'spec.holders[1]: Duplicate value',
  ),
  claim(
    'key with a space',
    (s) => (s.key = 'Deployment/web server'),
    'key must start with a letter or digit',
    undefined,
    'spec.key in body should match', // an OpenAPI pattern: the API server's own words
  ),
  claim('unknown kind', (s) => (s.kind = 'Shared'), 'kind'),
  claim(
    'Pinned claim listing Services',
    (s) => Object.assign(s, { services: ['web'] }),
    'only a Service claim has services or releasedAt',
  ),
  claim(
    'Service claim with a holder',
    (s) => Object.assign(s, { kind: 'Service', services: ['web'] }),
    'a Service claim has no holders (its Services are listed in services)',
  ),
  claim(
    'Service claim with Services and releasedAt',
    (s) =>
      Object.assign(s, {
        ...validServiceClaimSpec(),
        holders: [],
        releasedAt: '2030-01-01T00:00:00Z',
      }),
    'a Service claim lists its Services, or none and releasedAt (its quarantine), never both',
  ),
  claim(
    'Service claim with neither Services nor releasedAt',
    (s) => Object.assign(s, { ...validServiceClaimSpec(), holders: [], services: [] }),
    'a Service claim lists its Services, or none and releasedAt (its quarantine), never both',
  ),
  claim(
    'Service claim naming a Service twice',
    (s) => Object.assign(s, { ...validServiceClaimSpec(), holders: [], services: ['a', 'a'] }),
    SERVICES_UNIQUE,
    undefined,
    'spec.services[1]: Duplicate value',
  ),
  claim(
    'released at a time that is not RFC 3339',
    (s) =>
      Object.assign(s, { ...releasedServiceClaimSpec(), holders: [], releasedAt: 'yesterday' }),
    'releasedAt must be an RFC 3339 time',
    undefined,
    'spec.releasedAt in body should match',
  ),
];
