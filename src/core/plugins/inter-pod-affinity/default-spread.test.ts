import { describe, expect, it } from 'vitest';
import { defaultSelector, withDefaultSpread } from './default-spread.ts';
import { makePod } from '../../model/pod.ts';
import { SYSTEM_DEFAULT_SPREAD } from '../../framework/types.ts';

describe("kube's PodTopologySpread defaulting", () => {
  const web = makePod('w', { cpuMilli: 1000 }, { labels: { app: 'web', tier: 'front' } });

  it("DefaultSelector: the selecting Services of the pod's namespace merged, then its controller's selector; nothing selects = undefined", () => {
    const services = [
      { namespace: 'default', selector: { app: 'web' } },
      { namespace: 'default', selector: { tier: 'front' } },
      { namespace: 'default', selector: { app: 'db' } },
      { namespace: 'other', selector: { app: 'web', zone: 'x' } },
      { namespace: 'default', selector: {} },
      { namespace: 'default' },
    ];
    expect(defaultSelector({ namespace: 'default', labels: { app: 'web', tier: 'front' } }, services)).toEqual({ matchLabels: { app: 'web', tier: 'front' } });
    expect(defaultSelector({ namespace: 'default', labels: { app: 'batch' } }, services)).toBeUndefined();
    expect(
      defaultSelector({ namespace: 'default', labels: { app: 'batch' } }, services, { matchExpressions: [{ key: 'app', operator: 'In', values: ['batch'] }] }),
    ).toEqual({ matchLabels: {}, matchExpressions: [{ key: 'app', operator: 'In', values: ['batch'] }] });
  });

  it('System gives the two built-in ScheduleAnyway constraints marked as system defaults; List its own; none for pods with constraints or without a selector', () => {
    const sel = { matchLabels: { app: 'web' } };
    expect(withDefaultSpread(web, undefined, sel).topologySpread).toEqual([
      { maxSkew: 3, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: sel, systemDefault: true },
      { maxSkew: 5, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: sel, systemDefault: true },
    ]);
    const list = {
      defaultingType: 'List' as const,
      constraints: [{ maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'DoNotSchedule' as const }],
    };
    expect(withDefaultSpread(web, list, sel).topologySpread).toEqual([
      { maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'DoNotSchedule', labelSelector: sel },
    ]);
    expect(withDefaultSpread(web, { defaultingType: 'List', constraints: [] }, sel)).toBe(web);
    expect(withDefaultSpread(web, SYSTEM_DEFAULT_SPREAD, undefined)).toBe(web);
    expect(withDefaultSpread(web, SYSTEM_DEFAULT_SPREAD, { matchLabels: {} })).toBe(web);
    const own = makePod(
      'o',
      { cpuMilli: 1000 },
      { topologySpread: [{ maxSkew: 2, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'DoNotSchedule' }] },
    );
    expect(withDefaultSpread(own, SYSTEM_DEFAULT_SPREAD, sel)).toBe(own);
  });
});
