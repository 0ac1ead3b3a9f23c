import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseState, renderState, translate } from './index.js';
import type { NetpolIR } from './ir.js';
import {
  comment,
  dropLogPrefix,
  render,
  renderTable,
  tableScript,
  type RenderOptions,
} from './render.js';
import { local, namespace, pod, policy, state } from '../testing/builders.js';
import { arbitraryState } from '../testing/arbitrary.js';

const namespaces = [namespace('x')];
const pods = [
  pod('x/a', { app: 'a' }, ['10.0.0.1', 'fd00::1']),
  pod('x/b', { app: 'b' }, ['10.0.0.2']),
];
const locals = [local('x/a', 'fl-a'), local('x/b', 'fl-b')];
const script = (policies: unknown[]) =>
  renderState(state({ namespaces, pods, policies, local: locals }));
const renderIr = (policies: unknown[]) =>
  translate(parseState(state({ namespaces, pods, policies, local: locals })));
const chain = (text: string, name: string) => {
  const start = text.indexOf(`\tchain ${name} {`);
  if (start < 0) return undefined;
  return text.slice(start, text.indexOf('\t}', start) + 2);
};

describe('render', () => {
  it('replaces the table in one transaction: create, delete, define', () => {
    const lines = script([]).split('\n');
    expect(lines.slice(1, 4)).toEqual([
      'table inet flock {}',
      'delete table inet flock',
      'table inet flock {',
    ]);
  });

  it('an isolated pod gets a verdict-map entry and a chain that ends in drop', () => {
    const text = script([
      policy('x/p', {
        podSelector: { matchLabels: { app: 'a' } },
        ingress: [{ ports: [{ port: 80 }] }],
      }),
    ]);
    expect(text).toContain('elements = { "fl-a" : jump ingress_fl-a }');
    expect(chain(text, 'ingress_fl-a')).toBe(
      [
        '\tchain ingress_fl-a {',
        '\t\tcomment "x/a ingress: x/p"',
        '\t\tmeta l4proto . th dport @ports_0 accept comment "x/p ingress[0]"',
        '\t\tcounter drop',
        '\t}',
      ].join('\n'),
    );
    expect(chain(text, 'ingress_fl-b')).toBeUndefined();
    expect(chain(text, 'egress_fl-a')).toBeUndefined();
  });

  it('with logDroppedPerSecond, a pod chain logs (rate-limited, naming pod and direction) before its counted drop', () => {
    const ir = renderIr([
      policy('x/p', {
        podSelector: { matchLabels: { app: 'a' } },
        policyTypes: ['Ingress', 'Egress'],
      }),
    ]);
    const text = tableScript(renderTable(ir, { logDroppedPerSecond: 5 }));
    for (const direction of ['ingress', 'egress'])
      expect(chain(text, `${direction}_fl-a`)?.split('\n').slice(-3)).toEqual([
        `\t\tlimit rate 5/second burst 10 packets log prefix "flock-drop ${direction} x/a: " level info`,
        '\t\tcounter drop',
        '\t}',
      ]);
    expect(tableScript(renderTable(ir))).not.toContain(' log ');
    expect(tableScript(renderTable(ir, { logDroppedPerSecond: 0 }))).not.toContain(' log ');
    expect(dropLogPrefix('ingress', 'ns/we"ird pod')).toBe('flock-drop ingress ns/we_ird_pod: ');
  });

  it('ingress matches sources and accepts; egress matches destinations and returns', () => {
    const text = script([
      policy('x/p', {
        podSelector: { matchLabels: { app: 'a' } },
        ingress: [{ from: [{ podSelector: {} }] }],
        egress: [{ to: [{ podSelector: {} }] }],
      }),
    ]);
    expect(chain(text, 'ingress_fl-a')).toContain('ip saddr @peers_0_v4 accept');
    expect(chain(text, 'ingress_fl-a')).toContain('ip6 saddr @peers_0_v6 accept');
    // Same peers as the ingress rule: one shared set.
    expect(chain(text, 'egress_fl-a')).toContain('ip daddr @peers_0_v4 return');
  });

  it('a family without peers gets no rule and no set', () => {
    const text = script([
      policy('x/p', {
        podSelector: {},
        ingress: [{ from: [{ podSelector: { matchLabels: { app: 'b' } } }] }],
      }),
    ]);
    expect(text).toContain('set peers_0_v4');
    expect(text).not.toContain('peers_0_v6');
  });

  it('port sets get flags interval only when they hold a range', () => {
    const text = script([
      policy('x/p', {
        podSelector: {},
        ingress: [{ ports: [{ port: 80 }] }, { ports: [{ port: 80, endPort: 81 }] }],
      }),
    ]);
    expect(text).toMatch(/set ports_0 \{\n\t\ttype inet_proto \. inet_service\n\t\telements/);
    expect(text).toMatch(
      /set ports_1 \{\n\t\ttype inet_proto \. inet_service\n\t\tflags interval\n/,
    );
  });

  it('anti-spoofing comes before conntrack, and neighbour discovery before anti-spoofing', () => {
    const text = script([]);
    const input = chain(text, 'input') ?? '';
    expect(input.indexOf('nd-neighbor-solicit')).toBeLessThan(input.indexOf('anti-spoofing'));
    expect(input.indexOf('anti-spoofing')).toBeLessThan(
      input.indexOf('ct state established,related accept'),
    );
    expect(text).toContain('"fl-a" . 10.0.0.1, "fl-b" . 10.0.0.2');
  });

  it('the same state renders the same text whatever the order of its lists', () => {
    const policies = [
      policy('x/p', { podSelector: {}, ingress: [{ from: [{ podSelector: {} }] }] }),
      policy('x/q', { podSelector: {}, egress: [{ ports: [{ port: 53, protocol: 'UDP' }] }] }),
    ];
    const a = renderState(state({ namespaces, pods, policies, local: locals }));
    const b = renderState(
      state({ namespaces, pods, policies: [...policies].reverse(), local: [...locals].reverse() }),
    );
    expect(b).toBe(a);
  });

  it('comments cannot break out of their quotes', () => {
    expect(comment('a"b;c\nd')).toBe('comment "a_b_c_d"');
    expect(comment('x'.repeat(300))).toHaveLength('comment ""'.length + 128);
  });

  it('an IR with no pods still renders the base chains', () => {
    const empty: NetpolIR = { pods: [], addressSets: [], portSets: [], tupleSets: [] };
    const text = render(empty);
    expect(text).toContain('chain forward');
    expect(text).not.toContain('elements');
  });

  it("closes the agent's port to local pods on input, after anti-spoofing; nothing without the option", () => {
    const empty: NetpolIR = { pods: [], addressSets: [], portSets: [], tupleSets: [] };
    const input = (o: RenderOptions) =>
      (chain(tableScript(renderTable(empty, o)), 'input') ?? '').split('\n');
    const closed = input({ nodePortsClosedToPods: [9901, 9901, 0, 70000] });
    const rule = closed.findIndex((l) => l.includes('tcp dport { 9901 }'));
    expect(closed[rule]).toBe(
      '\t\tiifname @pod_ifaces tcp dport { 9901 } counter drop comment "agent port: not for pods"',
    );
    expect(rule).toBeGreaterThan(closed.findLastIndex((l) => l.includes('anti-spoofing')));
    expect(rule).toBeLessThan(closed.findIndex((l) => l.includes('ct state established')));
    expect(input({}).some((l) => l.includes('dport'))).toBe(false);
  });
});

describe('render: property', () => {
  it('never throws on valid states and is deterministic', () => {
    fc.assert(
      fc.property(arbitraryState(), (raw) => {
        const first = renderState(raw);
        expect(renderState(structuredClone(raw))).toBe(first);
        expect(first.startsWith('# flock')).toBe(true);
      }),
      { numRuns: 200 },
    );
  });
});
