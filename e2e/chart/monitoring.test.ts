// The chart's observability objects: the Grafana dashboard ConfigMap (on by default, labelled
// for Grafana's sidecar), PodMonitor/ServiceMonitor/PrometheusRule only when enabled, the
// values schema refusing bad monitoring values, and the alert rules checked and unit-tested by
// the real promtool (Debian's prometheus package). Every panel's query against a real
// Prometheus scraping a lab: e2e/lab/scenarios/observability.cluster.test.ts.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { run } from '@flock/exec';
import { requireTools } from '@flock/testkit';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CHART, TESTDATA, find, render } from './support.js';
import { agentMetrics, operatorMetrics } from './registered-metrics.js';
import {
  Dashboard,
  dashboardQueries,
  queryMetrics,
  unregisteredMetrics,
} from '../shared/dashboard.js';

const RULES = join(CHART, 'files', 'alerts.yaml');
const DASHBOARD = join(CHART, 'files', 'dashboard.json');
const MONITORING_KINDS = ['PodMonitor', 'ServiceMonitor', 'PrometheusRule'];

const Labelled = z.looseObject({
  metadata: z.looseObject({
    labels: z.record(z.string(), z.string()),
    namespace: z.string().optional(),
  }),
  data: z.record(z.string(), z.string()).optional(),
  spec: z.unknown().optional(),
});

describe('the Grafana dashboard', () => {
  it('is a ConfigMap labelled grafana_dashboard=1 holding the dashboard, every panel with a query', async () => {
    const objects = await render();
    const cm = Labelled.parse(find(objects, 'ConfigMap', 'flock-dashboard'));
    expect(cm.metadata.labels['grafana_dashboard']).toBe('1');
    expect(cm.metadata.namespace).toBe('flock-system');
    const dashboard = Dashboard.parse(JSON.parse(cm.data!['flock.json']!));
    expect(dashboard.uid).toBe('flock-overview');
    const file = Dashboard.parse(JSON.parse(readFileSync(DASHBOARD, 'utf8')));
    expect(dashboard).toEqual(file);
    expect(dashboard.panels.filter((p) => p.type === 'row').map((p) => p.title)).toEqual([
      'BGP',
      'BIRD',
      'CNI',
      'NetworkPolicy',
      'Addresses',
      'Loops and caches',
      'Operator',
      'Service addresses',
    ]);
    expect(new Set(dashboard.panels.map((p) => p.id)).size).toBe(dashboard.panels.length);
    const queries = dashboardQueries(dashboard);
    expect(queries.length).toBeGreaterThanOrEqual(40);
    expect(new Set(queries.map((q) => q.panel)).size).toBe(queries.length);
    // Nothing Prometheus-operator-shaped unless asked for.
    expect(objects.filter((o) => MONITORING_KINDS.includes(o.kind))).toEqual([]);
  });

  it('every metric a panel reads is one the agent or the operator registers', async () => {
    const dashboard = Dashboard.parse(JSON.parse(readFileSync(DASHBOARD, 'utf8')));
    const registered = [...(await agentMetrics()), ...(await operatorMetrics())];
    expect(unregisteredMetrics(dashboard, registered)).toEqual([]);
    // The Service addresses row reads the agent's and the operator's Service metrics.
    const row = dashboard.panels.findIndex((p) => p.title === 'Service addresses');
    const serviceMetrics = new Set(
      dashboardQueries({ ...dashboard, panels: dashboard.panels.slice(row + 1) }).flatMap((q) =>
        queryMetrics(q.expr),
      ),
    );
    expect([...serviceMetrics].sort()).toEqual([
      'flock_agent_routes_exported',
      'flock_operator_claim_gc_deletions_total',
      'flock_operator_claim_gc_services_removed_total',
      'flock_operator_claims',
      'flock_operator_pool_condition',
      'flock_operator_reconcile_total',
      'flock_operator_service_addresses',
      'flock_operator_writes_total',
    ]);
    // The check itself: a query naming a metric nobody registers, or reading none, is reported;
    // a histogram's _bucket series is its histogram's, a gauge's is not.
    const made = {
      ...dashboard,
      panels: [
        {
          id: 1000,
          type: 'timeseries',
          title: 'Made up',
          targets: [
            { refId: 'A', expr: 'sum(flock_operator_service_addresses_free)' },
            { refId: 'B', expr: 'vector(1)' },
            {
              refId: 'C',
              expr: 'histogram_quantile(0.9, sum by (le) (rate(flock_agent_add_to_export_seconds_bucket[5m]))) or flock_operator_claims_bucket',
            },
          ],
        },
      ],
    };
    expect(unregisteredMetrics(made, registered)).toEqual([
      'Made up/A: flock_operator_service_addresses_free',
      'Made up/B: no metric in vector(1)',
      'Made up/C: flock_operator_claims_bucket',
    ]);
  });

  it('reads the metric names out of PromQL: not functions, label names, strings, ranges or keywords', () => {
    expect(
      queryMetrics(
        'sum by (pool) (a{state="b(c)"}) / ignoring(state) group_left b_total offset 5m or vector(1e3) > bool rate(c:d_bucket[5m]) unless on (le) a',
      ),
    ).toEqual(['a', 'b_total', 'c:d_bucket']);
  });

  it('can go to another namespace with other labels, or be left out', async () => {
    const moved = await render([
      '--set',
      'monitoring.dashboard.namespace=grafana',
      '--set',
      'monitoring.dashboard.labels.team=net',
    ]);
    const cm = Labelled.parse(find(moved, 'ConfigMap', 'flock-dashboard'));
    expect(cm.metadata.namespace).toBe('grafana');
    expect(cm.metadata.labels).toMatchObject({ grafana_dashboard: '1', team: 'net' });
    const off = await render(['--set', 'monitoring.dashboard.enabled=false']);
    expect(off.some((o) => o.kind === 'ConfigMap' && o.metadata.name === 'flock-dashboard')).toBe(
      false,
    );
  });
});

describe('Prometheus Operator objects', () => {
  it('PodMonitors, ServiceMonitors with their Services, and the PrometheusRule when enabled', async () => {
    const objects = await render([
      '--set',
      'peerRelay.enabled=true',
      '--set',
      'monitoring.podMonitor.enabled=true',
      '--set',
      'monitoring.podMonitor.labels.release=prom',
      '--set',
      'monitoring.serviceMonitor.enabled=true',
      '--set',
      'monitoring.prometheusRule.enabled=true',
    ]);
    const template = (kind: string, name: string) =>
      z
        .looseObject({
          spec: z.looseObject({
            template: z.looseObject({
              metadata: z.looseObject({ labels: z.record(z.string(), z.string()) }),
            }),
          }),
        })
        .parse(find(objects, kind, name)).spec.template.metadata.labels;
    const Monitor = z.looseObject({
      metadata: z.looseObject({ labels: z.record(z.string(), z.string()) }),
      spec: z.looseObject({
        selector: z.object({ matchLabels: z.record(z.string(), z.string()) }),
        podMetricsEndpoints: z
          .array(z.looseObject({ port: z.string(), path: z.string() }))
          .optional(),
        endpoints: z.array(z.looseObject({ port: z.string(), path: z.string() })).optional(),
      }),
    });
    for (const [kind, workload] of [
      ['agent', 'DaemonSet'],
      ['operator', 'Deployment'],
      ['peer-relay', 'Deployment'],
    ] as const) {
      const pods = template(workload, `flock-${kind}`);
      const pm = Monitor.parse(find(objects, 'PodMonitor', `flock-${kind}`));
      expect(pm.metadata.labels['release']).toBe('prom');
      expect(pods).toMatchObject(pm.spec.selector.matchLabels);
      expect(pm.spec.podMetricsEndpoints).toEqual([
        expect.objectContaining({ port: 'health', path: '/metrics' }),
      ]);
      const svc = z
        .looseObject({
          metadata: z.looseObject({ labels: z.record(z.string(), z.string()) }),
          spec: z.looseObject({
            clusterIP: z.string(),
            selector: z.record(z.string(), z.string()),
          }),
        })
        .parse(find(objects, 'Service', `flock-${kind}-metrics`));
      expect(svc.spec.clusterIP).toBe('None');
      expect(pods).toMatchObject(svc.spec.selector);
      const sm = Monitor.parse(find(objects, 'ServiceMonitor', `flock-${kind}`));
      expect(svc.metadata.labels).toMatchObject(sm.spec.selector.matchLabels);
      expect(sm.spec.endpoints).toEqual([
        expect.objectContaining({ port: 'health', path: '/metrics' }),
      ]);
    }
    // No relay, nothing to scrape for it.
    const noRelay = await render(['--set', 'monitoring.podMonitor.enabled=true']);
    expect(noRelay.filter((o) => o.kind === 'PodMonitor').map((o) => o.metadata.name)).toEqual([
      'flock-agent',
      'flock-operator',
    ]);
    const rule = z
      .looseObject({ spec: z.unknown() })
      .parse(find(objects, 'PrometheusRule', 'flock-alerts'));
    expect(rule.spec).toEqual(parse(readFileSync(RULES, 'utf8')));
  });

  it('the values schema refuses a bad monitoring value', async () => {
    requireTools('helm');
    const bad = async (set: string) => {
      try {
        await run('helm', ['template', 'flock', CHART, '--set', set], { timeoutMs: 60_000 });
      } catch (e) {
        return String((e as { stderr?: string }).stderr);
      }
      throw new Error(`${set} was accepted`);
    };
    expect(await bad('monitoring.podMonitor.enabled=yes')).toMatch(
      /monitoring\/podMonitor\/enabled': got string, want boolean/,
    );
    expect(await bad('monitoring.serviceMonitor.interval=often')).toMatch(
      /serviceMonitor\/interval': 'often' does not match/,
    );
    expect(await bad('monitoring.grafana=true')).toMatch(/grafana/);
  });
});

describe('the alert rules', () => {
  it('promtool checks them and its rule unit tests pass (each alert fires on its fault, not on a healthy node)', async () => {
    requireTools('promtool');
    const check = await run('promtool', ['check', 'rules', RULES]);
    expect(check.stdout).toMatch(/SUCCESS: 6 rules found/);
    const test = await run('promtool', ['test', 'rules', join(TESTDATA, 'alerts.test.yaml')]);
    expect(test.stdout).toMatch(/SUCCESS/);
  });
});
