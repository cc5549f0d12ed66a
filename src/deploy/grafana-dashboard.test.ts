import { describe, expect, it } from 'vitest';
import type { Panel } from '@grafana/schema';
import { plainObjects } from './bundle.ts';
import { DASHBOARD_FILE, dashboardJson, dashboardQueries, grafanaDashboard } from './grafana-dashboard.ts';
import type { Json } from './tree.ts';
import { resolveValues } from './values.ts';

type Obj = { kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> }; data?: Record<string, string> };
const configMaps = (list: readonly Json[]): Obj[] => list.filter((o) => (o as Obj).kind === 'ConfigMap') as Obj[];

describe('the Grafana dashboard in the chart', () => {
  it('is off by default; enabled, one ConfigMap in the namespace with the sidecar label, holding the dashboard JSON', () => {
    expect(configMaps(plainObjects())).toEqual([]);
    const v = resolveValues({ grafanaDashboard: { enabled: true } }, 'ops');
    if (!v.ok) throw new Error(v.errors.join('\n'));
    const [cm, ...more] = configMaps(plainObjects(v.value, 'ops'));
    expect(more).toEqual([]);
    expect(cm?.metadata).toMatchObject({ name: 'sits-grafana-dashboard', namespace: 'ops', labels: { grafana_dashboard: '1' } });
    expect(cm?.data?.[DASHBOARD_FILE]).toBe(dashboardJson());
    expect(resolveValues({ grafanaDashboard: { enabled: 'yes' } })).toMatchObject({
      ok: false,
      errors: [expect.stringContaining('values.grafanaDashboard.enabled')],
    });
  });

  it('has the four rows, unique panel ids, a Prometheus query in every panel, and panels inside the 24-column grid without overlap', () => {
    const d = grafanaDashboard();
    const panels = d.panels ?? [];
    expect(panels.filter((p) => p.type === 'row').map((p) => p.title)).toEqual(['Cluster', 'Queues', 'Scheduler performance', 'GPU health']);
    expect(new Set(panels.map((p) => p.id)).size).toBe(panels.length);
    const cells = new Set<string>();
    for (const p of panels) {
      const g = p.gridPos ?? { x: 0, y: 0, w: 0, h: 0 };
      expect(g.x + g.w, p.title).toBeLessThanOrEqual(24);
      for (let x = g.x; x < g.x + g.w; x++) {
        for (let y = g.y; y < g.y + g.h; y++) {
          expect(cells.has(`${x},${y}`), `${p.title} overlaps at ${x},${y}`).toBe(false);
          cells.add(`${x},${y}`);
        }
      }
      if (p.type === 'row') continue;
      const targets = (p as Panel).targets ?? [];
      expect(targets.length, p.title).toBeGreaterThan(0);
      for (const t of targets) expect(t).toMatchObject({ datasource: { type: 'prometheus', uid: '${datasource}' }, expr: expect.stringMatching(/sits_/) });
    }
    expect(dashboardQueries().length).toBe(panels.filter((p) => p.type !== 'row').reduce((s, p) => s + ((p as Panel).targets?.length ?? 0), 0));
  });
});
