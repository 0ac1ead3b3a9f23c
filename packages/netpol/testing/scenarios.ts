// Policy scenarios for the kernel tier, each with hand-written expectations per direction
// (the harness combines them: the source's egress AND the destination's ingress).
// Several are the examples of the Kubernetes NetworkPolicy documentation, adapted to the
// topology (ports 6379/5978 become 80/81, the documentation's CIDRs become the lab's).
import { policy } from './builders.js';
import type { Endpoint, Probe } from './lab.js';
import type { Scenario } from './matrix.js';

const tcp = (p: Probe) => p.proto === 'tcp';
const udp = (p: Probe) => p.proto === 'udp';
const isPod = (e: Endpoint) => e.kind === 'pod';
const denyIngress = (ns: string) =>
  policy(`${ns}/default-deny-ingress`, { podSelector: {}, policyTypes: ['Ingress'] });
const denyEgress = (ns: string) =>
  policy(`${ns}/default-deny-egress`, { podSelector: {}, policyTypes: ['Egress'] });
const nsName = (ns: string) => ({ matchLabels: { 'kubernetes.io/metadata.name': ns } });

export const SCENARIOS: Scenario[] = [
  { name: 'no policies: everything is allowed', policies: [] },
  {
    name: 'docs: default deny all ingress traffic (x)',
    policies: [denyIngress('x')],
    ingress: (_f, t) => t.ns !== 'x',
  },
  {
    name: 'docs: allow all ingress traffic (x), next to a deny-all',
    policies: [denyIngress('x'), policy('x/allow-all-ingress', { podSelector: {}, ingress: [{}] })],
  },
  {
    name: 'docs: default deny all egress traffic (x)',
    policies: [denyEgress('x')],
    egress: (f) => f.ns !== 'x',
  },
  {
    name: 'docs: allow all egress traffic (x), next to a deny-all',
    policies: [
      denyEgress('x'),
      policy('x/allow-all-egress', { podSelector: {}, egress: [{}], policyTypes: ['Egress'] }),
    ],
  },
  {
    name: 'docs: default deny all ingress and all egress traffic (x)',
    policies: [
      policy('x/default-deny-all', { podSelector: {}, policyTypes: ['Ingress', 'Egress'] }),
    ],
    ingress: (_f, t) => t.ns !== 'x',
    egress: (f) => f.ns !== 'x',
  },
  {
    name: 'docs: test-network-policy (ipBlock with except, namespaceSelector, podSelector, ports; egress to a CIDR)',
    policies: [
      policy('x/test-network-policy', {
        podSelector: { matchLabels: { pod: 'a' } },
        policyTypes: ['Ingress', 'Egress'],
        ingress: [
          {
            from: [
              { ipBlock: { cidr: '203.0.113.0/24', except: ['203.0.113.128/25'] } },
              { namespaceSelector: { matchLabels: { team: 'red' } } },
              { podSelector: { matchLabels: { pod: 'b' } } },
            ],
            ports: [{ protocol: 'TCP', port: 80 }],
          },
        ],
        egress: [
          { to: [{ ipBlock: { cidr: '10.3.0.0/16' } }], ports: [{ protocol: 'TCP', port: 81 }] },
        ],
      }),
    ],
    ingress: (f, t, p) =>
      t.ref !== 'x/a' ||
      (tcp(p) &&
        p.port === 80 &&
        (f.ns === 'y' || f.ref === 'x/b' || (f.ref === 'ext' && p.family === 4))),
    egress: (f, t, p) =>
      f.ref !== 'x/a' || (t.ns === 'z' && p.family === 4 && tcp(p) && p.port === 81),
  },
  {
    name: 'docs: namespaceSelector and podSelector in one peer (AND)',
    policies: [
      policy('x/and', {
        podSelector: {},
        ingress: [
          {
            from: [
              {
                namespaceSelector: { matchLabels: { team: 'red' } },
                podSelector: { matchLabels: { pod: 'a' } },
              },
            ],
          },
        ],
      }),
    ],
    ingress: (f, t) => t.ns !== 'x' || f.ref === 'y/a',
  },
  {
    name: 'docs: namespaceSelector or podSelector as two peers (OR)',
    policies: [
      policy('x/or', {
        podSelector: {},
        ingress: [
          {
            from: [
              { namespaceSelector: { matchLabels: { team: 'red' } } },
              { podSelector: { matchLabels: { pod: 'a' } } },
            ],
          },
        ],
      }),
    ],
    ingress: (f, t) => t.ns !== 'x' || f.ns === 'y' || f.ref === 'x/a',
  },
  {
    name: 'a podSelector peer selects pods of the policy namespace only',
    policies: [
      policy('y/from-b', {
        podSelector: { matchLabels: { pod: 'a' } },
        ingress: [{ from: [{ podSelector: { matchLabels: { pod: 'b' } } }] }],
      }),
    ],
    ingress: (f, t) => t.ref !== 'y/a' || f.ref === 'y/b',
  },
  {
    name: 'namespaceSelector with matchExpressions NotIn',
    policies: [
      policy('z/not-red', {
        podSelector: {},
        ingress: [
          {
            from: [
              {
                namespaceSelector: {
                  matchExpressions: [{ key: 'team', operator: 'NotIn', values: ['red'] }],
                },
              },
            ],
          },
        ],
      }),
    ],
    ingress: (f, t) => t.ns !== 'z' || (isPod(f) && f.ns !== 'y'),
  },
  {
    name: 'the kubernetes.io/metadata.name label selects a namespace by name',
    policies: [
      policy('x/from-z', {
        podSelector: { matchLabels: { pod: 'c' } },
        ingress: [{ from: [{ namespaceSelector: nsName('z') }] }],
      }),
    ],
    ingress: (f, t) => t.ref !== 'x/c' || f.ns === 'z',
  },
  {
    name: 'ingress on TCP port 80 only (protocol defaults to TCP)',
    policies: [policy('y/tcp-80', { podSelector: {}, ingress: [{ ports: [{ port: 80 }] }] })],
    ingress: (_f, t, p) => t.ns !== 'y' || (tcp(p) && p.port === 80),
  },
  {
    name: 'ingress on UDP port 81 only, from: [] means every source',
    policies: [
      policy('z/udp-81', {
        podSelector: { matchLabels: { pod: 'b' } },
        ingress: [{ from: [], ports: [{ protocol: 'UDP', port: 81 }] }],
      }),
    ],
    ingress: (_f, t, p) => t.ref !== 'z/b' || (udp(p) && p.port === 81),
  },
  {
    name: 'endPort: a TCP range 80-81',
    policies: [
      policy('x/tcp-range', {
        podSelector: {},
        ingress: [{ ports: [{ protocol: 'TCP', port: 80, endPort: 81 }] }],
      }),
    ],
    ingress: (_f, t, p) => t.ns !== 'x' || tcp(p),
  },
  {
    name: 'endPort: a UDP range 79-80',
    policies: [
      policy('x/udp-range', {
        podSelector: { matchLabels: { pod: 'b' } },
        ingress: [{ ports: [{ protocol: 'UDP', port: 79, endPort: 80 }] }],
      }),
    ],
    ingress: (_f, t, p) => t.ref !== 'x/b' || (udp(p) && p.port === 80),
  },
  {
    name: 'a named port (serve-81-udp)',
    policies: [
      policy('y/named', {
        podSelector: {},
        ingress: [{ ports: [{ protocol: 'UDP', port: 'serve-81-udp' }] }],
      }),
    ],
    ingress: (_f, t, p) => t.ns !== 'y' || (udp(p) && p.port === 81),
  },
  {
    name: 'a named port resolved per destination pod on ingress (web: a=80, b=81, c=none)',
    policies: [policy('x/web', { podSelector: {}, ingress: [{ ports: [{ port: 'web' }] }] })],
    ingress: (_f, t, p) =>
      t.ns !== 'x' ||
      (tcp(p) && ((t.pod === 'a' && p.port === 80) || (t.pod === 'b' && p.port === 81))),
  },
  {
    name: 'a named port resolved per destination pod on egress, remote pods included',
    policies: [
      policy('x/egress-web', {
        podSelector: {},
        policyTypes: ['Egress'],
        egress: [{ ports: [{ port: 'web' }] }],
      }),
    ],
    egress: (f, t, p) =>
      f.ns !== 'x' ||
      (tcp(p) &&
        isPod(t) &&
        ((t.pod === 'a' && p.port === 80) || ((t.pod === 'b' || t.pod === 'r') && p.port === 81))),
  },
  {
    name: 'named ports are protocol-aware (a UDP name asked for TCP matches nothing)',
    policies: [
      policy('z/wrong-protocol', {
        podSelector: {},
        ingress: [
          {
            ports: [
              { protocol: 'TCP', port: 'serve-80-udp' },
              { protocol: 'UDP', port: 'serve-80-tcp' },
            ],
          },
        ],
      }),
    ],
    ingress: (_f, t) => t.ns !== 'z',
  },
  {
    name: 'ipBlock IPv4: only the IPv4 addresses of namespace y',
    policies: [
      policy('x/v4-block', {
        podSelector: { matchLabels: { pod: 'a' } },
        ingress: [{ from: [{ ipBlock: { cidr: '10.2.0.0/16' } }] }],
      }),
    ],
    ingress: (f, t, p) => t.ref !== 'x/a' || (f.ns === 'y' && p.family === 4),
  },
  {
    name: 'ipBlock IPv6 with except: every pod but those of y, over IPv6',
    policies: [
      policy('y/v6-block', {
        podSelector: { matchLabels: { pod: 'c' } },
        ingress: [{ from: [{ ipBlock: { cidr: 'fd00::/16', except: ['fd00:2::/32'] } }] }],
      }),
    ],
    ingress: (f, t, p) => t.ref !== 'y/c' || (p.family === 6 && isPod(f) && f.ns !== 'y'),
  },
  {
    name: 'ipBlock 0.0.0.0/0 except namespace x (the external host included)',
    policies: [
      policy('z/not-x', {
        podSelector: {},
        ingress: [{ from: [{ ipBlock: { cidr: '0.0.0.0/0', except: ['10.1.0.0/16'] } }] }],
      }),
    ],
    ingress: (f, t, p) => t.ns !== 'z' || (p.family === 4 && f.ns !== 'x'),
  },
  {
    name: 'egress only to an external ipBlock (both families)',
    policies: [
      policy('x/to-ext', {
        podSelector: {},
        egress: [
          {
            to: [{ ipBlock: { cidr: '203.0.113.0/24' } }, { ipBlock: { cidr: '2001:db8:e::/48' } }],
          },
        ],
        policyTypes: ['Egress'],
      }),
    ],
    egress: (f, t) => f.ns !== 'x' || t.ref === 'ext',
  },
  {
    name: 'egress default deny with DNS-style exceptions (UDP and TCP 80 to z/a)',
    policies: [
      denyEgress('x'),
      policy('x/allow-dns', {
        podSelector: {},
        policyTypes: ['Egress'],
        egress: [
          {
            to: [{ namespaceSelector: nsName('z'), podSelector: { matchLabels: { pod: 'a' } } }],
            ports: [
              { protocol: 'UDP', port: 80 },
              { protocol: 'TCP', port: 80 },
            ],
          },
        ],
      }),
    ],
    egress: (f, t, p) => f.ns !== 'x' || (t.ref === 'z/a' && p.port === 80),
  },
  {
    name: "a connection needs the source's egress and the destination's ingress",
    policies: [
      policy('x/a-to-red', {
        podSelector: { matchLabels: { pod: 'a' } },
        policyTypes: ['Egress'],
        egress: [{ to: [{ namespaceSelector: { matchLabels: { team: 'red' } } }] }],
      }),
      policy('y/b-from-blue-b', {
        podSelector: { matchLabels: { pod: 'b' } },
        ingress: [
          {
            from: [
              {
                namespaceSelector: { matchLabels: { team: 'blue' } },
                podSelector: { matchLabels: { pod: 'b' } },
              },
            ],
          },
        ],
      }),
    ],
    egress: (f, t) => f.ref !== 'x/a' || t.ns === 'y',
    ingress: (f, t) => t.ref !== 'y/b' || f.ref === 'x/b',
  },
  {
    name: 'policyTypes Egress only: its ingress rules are ignored',
    policies: [
      policy('y/egress-only', {
        podSelector: { matchLabels: { pod: 'a' } },
        policyTypes: ['Egress'],
        ingress: [{ from: [{ podSelector: { matchLabels: { pod: 'b' } } }] }],
        egress: [{ to: [{ podSelector: {} }] }],
      }),
    ],
    egress: (f, t) => f.ref !== 'y/a' || t.ns === 'y',
  },
  {
    name: 'several policies selecting a pod add up',
    policies: [
      policy('z/b-tcp-80', {
        podSelector: { matchLabels: { pod: 'a' } },
        ingress: [
          { from: [{ podSelector: { matchLabels: { pod: 'b' } } }], ports: [{ port: 80 }] },
        ],
      }),
      policy('z/blue-udp-81', {
        podSelector: {},
        ingress: [
          {
            from: [{ namespaceSelector: { matchLabels: { team: 'blue' } } }],
            ports: [{ protocol: 'UDP', port: 81 }],
          },
        ],
      }),
    ],
    ingress: (f, t, p) =>
      t.ns !== 'z' ||
      (t.pod === 'a' && f.ref === 'z/b' && tcp(p) && p.port === 80) ||
      (f.ns === 'x' && udp(p) && p.port === 81),
  },
  {
    name: 'a pod on another node is a peer by its IPs',
    policies: [
      policy('x/from-r', {
        podSelector: { matchLabels: { pod: 'c' } },
        ingress: [{ from: [{ podSelector: { matchLabels: { pod: 'r' } } }] }],
      }),
    ],
    ingress: (f, t) => t.ref !== 'x/c' || f.ref === 'x/r',
  },
  {
    name: 'an empty namespaceSelector means every pod, not every address',
    policies: [
      policy('y/all-pods', {
        podSelector: { matchLabels: { pod: 'a' } },
        ingress: [{ from: [{ namespaceSelector: {} }] }],
      }),
    ],
    ingress: (f, t) => t.ref !== 'y/a' || isPod(f),
  },
];
