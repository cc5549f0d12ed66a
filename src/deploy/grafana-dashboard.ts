/**
 * The Grafana dashboard shipped with the chart (a ConfigMap the Grafana sidecar loads: label
 * `grafana_dashboard: "1"`). Four rows: cluster, queues, scheduler performance, GPU health. The object is typed
 * with `Dashboard` of @grafana/schema, the TypeScript Grafana generates from its published dashboard schema
 * (kinds/dashboard), so `tsc` checks it against that schema (ADR 0066). Every panel's query must return data
 * from a real Prometheus scraping `sits run` (src/server/prometheus.e2e.test.ts); names are docs/metrics.md's.
 */
import type { Dashboard, Panel, RowPanel } from '@grafana/schema';

export const DASHBOARD_UID = 'sits-scheduler';
export const DASHBOARD_FILE = 'sits-scheduler.json';

interface Query {
  readonly expr: string;
  /** Legend; undefined: Grafana's automatic one (no `{{label}}`: the chart's templates would read it as Helm's). */
  readonly legend?: string;
}

type PanelKind = 'stat' | 'timeseries' | 'table' | 'bargauge';

interface PanelDef {
  readonly title: string;
  readonly description: string;
  readonly kind: PanelKind;
  readonly unit: string;
  readonly queries: readonly Query[];
  /** Grid width (of 24); height is 8 (stats 4). */
  readonly w: number;
}

const DATASOURCE = { type: 'prometheus', uid: '${datasource}' } as const;

const ROWS: readonly { readonly title: string; readonly panels: readonly PanelDef[] }[] = [
  {
    title: 'Cluster',
    panels: [
      {
        title: 'Nodes',
        description: 'Nodes with a valid GPU description the scheduler knows.',
        kind: 'stat',
        unit: 'short',
        queries: [{ expr: 'max(sits_cluster_nodes)' }],
        w: 4,
      },
      { title: 'Healthy GPUs', description: 'Healthy GPUs on those nodes.', kind: 'stat', unit: 'short', queries: [{ expr: 'max(sits_cluster_gpus)' }], w: 4 },
      {
        title: 'GPU allocation',
        description: 'Allocated GPU capacity (fractions count) over the healthy GPUs.',
        kind: 'stat',
        unit: 'percentunit',
        queries: [{ expr: 'sum(sits_node_allocated_gpus) / clamp_min(sum(sits_cluster_gpus), 1)' }],
        w: 4,
      },
      {
        title: 'Fragmentation (FGD)',
        description: 'Share of the free GPU capacity that the expected workload cannot use (FGD, ATC 23).',
        kind: 'stat',
        unit: 'percentunit',
        queries: [{ expr: 'max(sits_cluster_gpu_fragmentation_ratio)' }],
        w: 4,
      },
      {
        title: 'Pending pods',
        description: 'Pods for SITS waiting for a node.',
        kind: 'stat',
        unit: 'short',
        queries: [{ expr: 'max(sits_pending_pods)' }],
        w: 4,
      },
      {
        title: 'Leader',
        description: '1 on the replica holding the leader-election Lease.',
        kind: 'stat',
        unit: 'short',
        queries: [{ expr: 'max(sits_leader_status)' }],
        w: 4,
      },
      {
        title: 'GPUs over time',
        description: 'Healthy GPUs, GPUs with any part allocated, allocated capacity.',
        kind: 'timeseries',
        unit: 'short',
        queries: [
          { expr: 'max(sits_cluster_gpus)', legend: 'healthy' },
          { expr: 'max(sits_cluster_gpus_allocated)', legend: 'in use' },
          { expr: 'sum(sits_node_allocated_gpus)', legend: 'allocated' },
        ],
        w: 12,
      },
      {
        title: 'Fragmentation over time',
        description: 'FGD fragmentation rate of the free GPU capacity.',
        kind: 'timeseries',
        unit: 'percentunit',
        queries: [{ expr: 'max(sits_cluster_gpu_fragmentation_ratio)', legend: 'fragmentation' }],
        w: 12,
      },
    ],
  },
  {
    title: 'Queues',
    panels: [
      {
        title: 'Pending jobs by queue',
        description: 'Jobs (a pod or a gang) waiting for admission.',
        kind: 'timeseries',
        unit: 'short',
        queries: [{ expr: 'sum by (queue) (sits_queue_pending_jobs)' }],
        w: 8,
      },
      {
        title: 'Admitted jobs by queue',
        description: 'Jobs running (pods bound).',
        kind: 'timeseries',
        unit: 'short',
        queries: [{ expr: 'sum by (queue) (sits_queue_admitted_jobs)' }],
        w: 8,
      },
      {
        title: 'Scheduling queue',
        description: 'Jobs by where they wait: active, backoff, unschedulable.',
        kind: 'timeseries',
        unit: 'short',
        queries: [{ expr: 'sum by (state) (sits_pending_jobs)' }],
        w: 8,
      },
      {
        title: 'GPUs: used, nominal, fair share',
        description: 'Per queue: GPUs used, its nominal quota and its fair-share entitlement.',
        kind: 'timeseries',
        unit: 'short',
        queries: [
          { expr: 'sum by (queue) (sits_queue_used_gpus)', legend: 'used' },
          { expr: 'sum by (queue) (sits_queue_nominal_gpus)', legend: 'nominal' },
          { expr: 'sum by (queue) (sits_queue_fair_share_gpus)', legend: 'fair share' },
        ],
        w: 12,
      },
      {
        title: 'Borrowed GPUs',
        description: 'GPUs each queue uses above its nominal quota (borrowed within its cohort).',
        kind: 'timeseries',
        unit: 'short',
        queries: [{ expr: 'sum by (queue) (sits_queue_borrowed_gpus)' }],
        w: 12,
      },
      {
        title: 'Admission wait p90',
        description: 'Time from arrival to start, 90th percentile per queue.',
        kind: 'timeseries',
        unit: 's',
        queries: [{ expr: 'histogram_quantile(0.9, sum by (queue, le) (rate(sits_queue_admission_wait_seconds_bucket[5m])))' }],
        w: 12,
      },
      {
        title: 'Expected-start error p90',
        description: 'How far real starts were from the expected start SITS published (early or late).',
        kind: 'timeseries',
        unit: 's',
        queries: [{ expr: 'histogram_quantile(0.9, sum by (direction, le) (rate(sits_expected_start_error_seconds_bucket[1h])))' }],
        w: 12,
      },
    ],
  },
  {
    title: 'Scheduler performance',
    panels: [
      {
        title: 'Scheduling attempts',
        description: 'Attempts per second by result.',
        kind: 'timeseries',
        unit: 'ops',
        queries: [{ expr: 'sum by (result) (rate(sits_scheduling_attempts_total[5m]))' }],
        w: 8,
      },
      {
        title: 'Attempt latency p99',
        description: 'Time to decide one pod or gang (binding included for gangs).',
        kind: 'timeseries',
        unit: 's',
        queries: [{ expr: 'histogram_quantile(0.99, sum by (le) (rate(sits_scheduling_attempt_duration_seconds_bucket[5m])))', legend: 'p99' }],
        w: 8,
      },
      {
        title: 'Extension point latency p99',
        description: 'PreFilter, FilterScore, PickGpus, Reserve, Permit per pod or gang; Bind per pods/binding call.',
        kind: 'timeseries',
        unit: 's',
        queries: [{ expr: 'histogram_quantile(0.99, sum by (extension_point, le) (rate(sits_framework_extension_point_duration_seconds_bucket[5m])))' }],
        w: 8,
      },
      {
        title: 'Bindings',
        description: 'Pods bound and binding errors per second.',
        kind: 'timeseries',
        unit: 'ops',
        queries: [
          { expr: 'sum(rate(sits_bindings_total[5m]))', legend: 'bound' },
          { expr: 'sum(rate(sits_binding_errors_total[5m]))', legend: 'errors' },
        ],
        w: 8,
      },
      {
        title: 'Preemptions (1h)',
        description: 'Preemptor jobs and their victims by reason (priority within a queue, reclaim across queues).',
        kind: 'timeseries',
        unit: 'short',
        queries: [
          { expr: 'sum by (reason) (increase(sits_preemptions_total[1h]))', legend: 'preemptors' },
          { expr: 'sum by (reason) (increase(sits_preemption_victims_total[1h]))', legend: 'victims' },
        ],
        w: 8,
      },
      {
        title: 'Gangs (1h)',
        description: 'Gangs bound, rolled back and completed after a crash.',
        kind: 'timeseries',
        unit: 'short',
        queries: [
          { expr: 'sum(increase(sits_gangs_bound_total[1h]))', legend: 'bound' },
          { expr: 'sum(increase(sits_gang_rollbacks_total[1h]))', legend: 'rolled back' },
          { expr: 'sum(increase(sits_gang_recoveries_total[1h]))', legend: 'recovered' },
        ],
        w: 8,
      },
      {
        title: 'API requests',
        description: 'Requests to the Kubernetes API server and failed ones, per second.',
        kind: 'timeseries',
        unit: 'reqps',
        queries: [
          { expr: 'sum(rate(sits_api_requests_total[5m]))', legend: 'requests' },
          { expr: 'sum(rate(sits_api_request_errors_total[5m]))', legend: 'errors' },
        ],
        w: 12,
      },
      {
        title: 'Scheduling cycles',
        description: 'Passes over the pending jobs per second.',
        kind: 'timeseries',
        unit: 'ops',
        queries: [{ expr: 'sum(rate(sits_scheduling_cycles_total[5m]))', legend: 'cycles' }],
        w: 12,
      },
    ],
  },
  {
    title: 'GPU health',
    panels: [
      {
        title: 'Unhealthy GPUs',
        description: 'GPUs marked unhealthy (not schedulable) on the known nodes.',
        kind: 'stat',
        unit: 'short',
        queries: [{ expr: 'max(sits_cluster_unhealthy_gpus)' }],
        w: 6,
      },
      {
        title: 'Nodes with the most unhealthy GPUs',
        description: 'Top 20 nodes by unhealthy GPUs (nodes without any are left out).',
        kind: 'bargauge',
        unit: 'short',
        queries: [{ expr: 'topk(20, max by (node) (sits_node_unhealthy_gpus) > 0)' }],
        w: 9,
      },
      {
        title: 'Node GPU allocation',
        description: "Allocated share of each node's GPUs (top 20).",
        kind: 'bargauge',
        unit: 'percentunit',
        queries: [{ expr: 'topk(20, max by (node) (sits_node_allocated_gpus) / clamp_min(max by (node) (sits_node_gpus), 1))' }],
        w: 9,
      },
      {
        title: 'Per-GPU allocation',
        description: 'Allocated share of each GPU; needs `sits run --metrics-per-gpu` (one series per GPU, docs/metrics.md).',
        kind: 'table',
        unit: 'percentunit',
        queries: [{ expr: 'max by (node, gpu) (sits_gpu_allocated_ratio)' }],
        w: 12,
      },
      {
        title: 'Unhealthy GPUs by device',
        description: 'GPUs reported unhealthy, by node and device index; needs `--metrics-per-gpu`.',
        kind: 'table',
        unit: 'short',
        queries: [{ expr: 'max by (node, gpu) (sits_gpu_healthy) == 0' }],
        w: 12,
      },
    ],
  },
];

function panel(def: PanelDef, id: number, x: number, y: number): Panel {
  return {
    id,
    type: def.kind,
    title: def.title,
    description: def.description,
    datasource: DATASOURCE,
    gridPos: { x, y, w: def.w, h: def.kind === 'stat' ? 4 : 8 },
    fieldConfig: { defaults: { unit: def.unit }, overrides: [] },
    options:
      def.kind === 'timeseries'
        ? { legend: { displayMode: 'list', placement: 'bottom', showLegend: true }, tooltip: { mode: 'multi', sort: 'desc' } }
        : def.kind === 'bargauge'
          ? { orientation: 'horizontal', displayMode: 'gradient' }
          : {},
    targets: def.queries.map((q, i) => ({
      refId: String.fromCharCode(65 + i),
      datasource: DATASOURCE,
      expr: q.expr,
      legendFormat: q.legend ?? '__auto',
      ...(def.kind === 'timeseries' ? {} : { instant: true, format: def.kind === 'table' ? 'table' : 'time_series' }),
    })),
  };
}

/** The dashboard: rows of panels laid out left to right, 24 columns wide. */
export function grafanaDashboard(): Dashboard {
  const panels: (Panel | RowPanel)[] = [];
  let id = 1;
  let y = 0;
  for (const row of ROWS) {
    panels.push({ id: id++, type: 'row', title: row.title, collapsed: false, panels: [], gridPos: { x: 0, y, w: 24, h: 1 } });
    y++;
    let x = 0;
    let rowH = 0;
    for (const def of row.panels) {
      const p = panel(def, id++, x, y);
      const h = p.gridPos?.h ?? 8;
      if (x + def.w > 24) {
        y += rowH;
        x = 0;
        rowH = 0;
      }
      panels.push({ ...p, gridPos: { x, y, w: def.w, h } });
      x += def.w;
      rowH = Math.max(rowH, h);
    }
    y += rowH;
  }
  return {
    uid: DASHBOARD_UID,
    title: 'SITS scheduler',
    description: 'SITS: cluster GPUs and fragmentation, queues, scheduler performance, GPU health (docs/metrics.md).',
    tags: ['sits', 'scheduler', 'gpu'],
    editable: true,
    schemaVersion: 39,
    version: 1,
    refresh: '30s',
    time: { from: 'now-6h', to: 'now' },
    timezone: 'browser',
    templating: { list: [{ name: 'datasource', label: 'Prometheus', type: 'datasource', query: 'prometheus', options: [] }] },
    annotations: { list: [] },
    links: [],
    panels,
  };
}

/** Every PromQL expression of the dashboard, with its panel's title (the e2e test runs each against Prometheus). */
export function dashboardQueries(d: Dashboard = grafanaDashboard()): { readonly panel: string; readonly expr: string }[] {
  const out: { panel: string; expr: string }[] = [];
  for (const p of d.panels ?? []) {
    if (p.type === 'row') continue;
    for (const t of (p as Panel).targets ?? []) out.push({ panel: (p as Panel).title ?? '', expr: String(t.expr) });
  }
  return out;
}

/** The ConfigMap's file: the dashboard as Grafana's JSON model. */
export function dashboardJson(): string {
  return `${JSON.stringify(grafanaDashboard(), null, 2)}\n`;
}
