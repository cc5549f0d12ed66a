// The generic controller runner on a real control plane, driven by a toy definition that only this file knows:
// an `Echo` (its own CRD) owns one ConfigMap per spec entry. Nothing in the runner names Echo or ConfigMap, so this
// shows that a new controller needs a definition and a pure reconcile, no runner change (ADR 0038).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApplyFailure, ControllerAction, ControllerDefinition, OwnedResource, WireObject } from '../../api/controller.ts';
import type { Clock } from '../../core/ports.ts';
import { KubeClient } from '../client/client.ts';
import { Registry } from 'prom-client';
import { ControllerMetrics } from './controller-metrics.ts';
import { runController, type RunningController } from './controller-runner.ts';
import { parsePromText, sampleValue } from '../../harness/prom-text.ts';
import { startControlPlane, type ControlPlane } from '../../harness/control-plane.ts';
import { createNs, waitFor } from '../../harness/e2e-kit.ts';

const GROUP = 'toy.sits.test';
const OWNER_LABEL = `${GROUP}/echo`;
const FINALIZER = `${GROUP}/cleanup`;
const CONFIG_MAP: OwnedResource = { apiVersion: 'v1', kind: 'ConfigMap', plural: 'configmaps', awaitWatch: true };

interface Echo extends WireObject {
  readonly spec?: { readonly entries?: Readonly<Record<string, string>>; readonly selfDestruct?: boolean };
  readonly status?: Readonly<Record<string, unknown>>;
}
interface ConfigMap extends WireObject {
  readonly data?: Readonly<Record<string, string>>;
}

/** The toy reconcile: pure, like every controller's. */
function reconcileEcho(
  echo: Echo,
  cms: readonly ConfigMap[],
  nowMs: number,
  lastErrors: readonly ApplyFailure[],
): { status?: Record<string, unknown>; actions: ControllerAction[] } {
  const name = echo.metadata.name ?? '';
  const live = cms.filter((c) => c.metadata.deletionTimestamp === undefined);
  const del = (c: ConfigMap): ControllerAction => ({ op: 'delete', kind: 'ConfigMap', name: c.metadata.name ?? '', uid: c.metadata.uid ?? '' });
  if (echo.metadata.deletionTimestamp !== undefined) return { actions: live.length > 0 ? live.map(del) : [{ op: 'removeFinalizer', finalizer: FINALIZER }] };
  if (!(echo.metadata.finalizers ?? []).includes(FINALIZER)) return { actions: [{ op: 'addFinalizer', finalizer: FINALIZER }] };
  if (echo.spec?.selfDestruct === true) return { actions: [{ op: 'deleteSelf' }] };
  const entries = echo.spec?.entries ?? {};
  const actions: ControllerAction[] = [];
  for (const [key, value] of Object.entries(entries)) {
    const cmName = `${name}-${key}`;
    const have = live.find((c) => c.metadata.name === cmName);
    if (have === undefined) {
      const object: ConfigMap = {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: cmName, namespace: echo.metadata.namespace, labels: { [OWNER_LABEL]: name } },
        data: { value },
      } as ConfigMap;
      actions.push({ op: 'create', kind: 'ConfigMap', object });
    } else if (have.data?.value !== value) actions.push({ op: 'patch', kind: 'ConfigMap', name: cmName, patch: { data: { value } } });
  }
  for (const c of live) if (!Object.keys(entries).some((k) => c.metadata.name === `${name}-${k}`)) actions.push(del(c));
  if (actions.some((a) => a.op === 'create'))
    actions.push({ op: 'event', type: 'Normal', reason: 'Echoed', message: `creating ${actions.filter((a) => a.op === 'create').length} ConfigMap(s)` });
  const status = {
    configMaps: live.map((c) => `${c.metadata.name ?? ''}=${c.data?.value ?? ''}`).sort(),
    at: new Date(nowMs).toISOString(),
    errors: lastErrors.map((e) => `${e.action} ${e.name ?? ''}: ${e.status}`),
  };
  return { status, actions };
}

const echoController: ControllerDefinition<Echo> = {
  primary: { apiVersion: `${GROUP}/v1`, kind: 'Echo', plural: 'echoes' },
  owned: [CONFIG_MAP],
  ownerLabel: OWNER_LABEL,
  component: 'toy-echo-controller',
  reconcile: ({ object, owned, nowMs, lastErrors }) => reconcileEcho(object, (owned.get('ConfigMap') ?? []) as ConfigMap[], nowMs, lastErrors ?? []),
};

const ECHO_CRD = {
  apiVersion: 'apiextensions.k8s.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: `echoes.${GROUP}` },
  spec: {
    group: GROUP,
    scope: 'Namespaced',
    names: { plural: 'echoes', singular: 'echo', kind: 'Echo', listKind: 'EchoList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        subresources: { status: {} },
        schema: {
          openAPIV3Schema: {
            type: 'object',
            properties: {
              spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
              status: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
            },
          },
        },
      },
    ],
  },
};

// A fixed clock: what reconcile writes as time must come from it, not from the machine.
const FIXED = Date.parse('2031-02-03T04:05:06Z');
const clock: Clock = { nowMs: () => FIXED };

let plane: ControlPlane;
let client: KubeClient;
const logs: string[] = [];
const echoes = (ns: string, name?: string): string => `/apis/${GROUP}/v1/namespaces/${ns}/echoes${name === undefined ? '' : `/${name}`}`;
const configMaps = async (ns: string, owner: string): Promise<ConfigMap[]> =>
  (await client.get<{ items: ConfigMap[] }>(`/api/v1/namespaces/${ns}/configmaps`, { labelSelector: `${OWNER_LABEL}=${owner}` })).items;
const getEcho = (ns: string, name: string): Promise<Echo> => client.get<Echo>(echoes(ns, name));

beforeAll(async () => {
  plane = await startControlPlane({ ...(process.env.SITS_K8S_BIN === undefined ? {} : { binDir: process.env.SITS_K8S_BIN }), log: (l) => logs.push(l) });
  client = new KubeClient(plane.kubeConfig());
});

afterAll(async () => {
  client?.close();
  await plane?.stop();
});

describe('controller runner with a toy definition', () => {
  it('waits for a missing CRD, then creates, patches and deletes owned objects, writes status with the given clock, and cleans up behind a finalizer', async () => {
    const ns = 'toy';
    await createNs(client, ns);
    // Started before the CRD exists: start() still resolves, says so once, and keeps looking with backoff.
    const registry = new Registry();
    const runner = await runController(client, echoController, { clock, log: (m) => logs.push(`runner: ${m}`), metrics: new ControllerMetrics(registry) });
    try {
      const absent = logs.filter((l) => l.startsWith('runner: warning: Echo API not installed (toy.sits.test/v1 echoes: 404)'));
      expect(absent).toHaveLength(1);
      expect(absent[0]).toMatch(/looking again with backoff up to 5 min$/);
      // Nothing reconciled yet: the series exist at 0 (as controller-runtime's do).
      const before = parsePromText(await registry.metrics());
      expect(sampleValue(before, 'controller_runtime_reconcile_total', { controller: 'echo', result: 'success' })).toBe(0);
      expect(sampleValue(before, 'workqueue_adds_total', { name: 'echo' })).toBe(0);
      await client.post('/apis/apiextensions.k8s.io/v1/customresourcedefinitions', ECHO_CRD);
      await waitFor('Echo CRD served', async () => (await client.get<{ items: unknown[] }>(echoes(ns))).items !== undefined, 60_000, 200);

      await client.post(echoes(ns), { apiVersion: `${GROUP}/v1`, kind: 'Echo', metadata: { name: 'e1' }, spec: { entries: { a: '1', b: '2' } } });
      const first = await waitFor(
        'status lists both ConfigMaps',
        async () => {
          const e = await getEcho(ns, 'e1');
          return JSON.stringify(e.status?.configMaps) === JSON.stringify(['e1-a=1', 'e1-b=2']) ? e : undefined;
        },
        60_000,
      );
      expect(first.status?.at).toBe(new Date(FIXED).toISOString());
      expect(first.metadata.finalizers).toEqual([FINALIZER]);
      const events = (
        await client.get<{
          items: { reason?: string; involvedObject?: { kind?: string; name?: string }; source?: { component?: string }; firstTimestamp?: string }[];
        }>(`/api/v1/namespaces/${ns}/events`)
      ).items;
      expect(
        events.filter((e) => e.reason === 'Echoed').map((e) => [e.involvedObject?.kind, e.involvedObject?.name, e.source?.component, e.firstTimestamp]),
      ).toEqual([['Echo', 'e1', 'toy-echo-controller', new Date(FIXED).toISOString().replace('.000', '')]]);

      // Change one value (patch), drop one entry (delete), add an invalid one (422, fed back to the next reconcile).
      const rv = (await getEcho(ns, 'e1')).metadata.resourceVersion;
      await client.mergePatch(echoes(ns, 'e1'), { metadata: { resourceVersion: rv }, spec: { entries: { a: '10', b: null, BAD: 'x' } } });
      const second = await waitFor(
        'patch, delete and the refused create show in status',
        async () => {
          const e = await getEcho(ns, 'e1');
          return JSON.stringify(e.status?.configMaps) === JSON.stringify(['e1-a=10']) &&
            JSON.stringify(e.status?.errors) === JSON.stringify(['createConfigMap e1-BAD: 422'])
            ? e
            : undefined;
        },
        60_000,
      );
      expect(second.status?.errors).toEqual(['createConfigMap e1-BAD: 422']);
      expect((await configMaps(ns, 'e1')).map((c) => [c.metadata.name, c.data?.value])).toEqual([['e1-a', '10']]);

      // Without the invalid entry the error clears.
      await client.mergePatch(echoes(ns, 'e1'), { spec: { entries: { BAD: null } } });
      await waitFor('error cleared', async () => JSON.stringify((await getEcho(ns, 'e1')).status?.errors) === '[]', 60_000);

      // Deletion: the finalizer holds the Echo until its ConfigMaps are gone (no garbage collector runs here).
      await client.delete(echoes(ns, 'e1'));
      await waitFor(
        'Echo and its ConfigMaps gone',
        async () => (await configMaps(ns, 'e1')).length === 0 && (await client.get<{ items: unknown[] }>(echoes(ns))).items.length === 0,
        60_000,
      );

      // deleteSelf: the reconcile deletes the object itself.
      await client.post(echoes(ns), { apiVersion: `${GROUP}/v1`, kind: 'Echo', metadata: { name: 'e2' }, spec: { selfDestruct: true } });
      await waitFor('self-destructing Echo gone', async () => (await client.get<{ items: unknown[] }>(echoes(ns))).items.length === 0, 60_000);
      // The absent API was reported once, not at each look.
      expect(logs.filter((l) => l.includes('Echo API not installed'))).toHaveLength(1);

      // controller-runtime's metrics moved: reconciles (the 422 above counted as an error), queue adds and waits.
      const after = parsePromText(await registry.metrics());
      const n = (name: string, labels: Record<string, string>): number => sampleValue(after, name, labels) ?? -1;
      expect(n('controller_runtime_reconcile_total', { controller: 'echo', result: 'success' })).toBeGreaterThan(3);
      expect(n('controller_runtime_reconcile_total', { controller: 'echo', result: 'error' })).toBeGreaterThanOrEqual(1);
      expect(n('controller_runtime_reconcile_errors_total', { controller: 'echo' })).toBe(
        n('controller_runtime_reconcile_total', { controller: 'echo', result: 'error' }),
      );
      const reconciles = ['success', 'error', 'requeue', 'requeue_after'].reduce(
        (t, result) => t + n('controller_runtime_reconcile_total', { controller: 'echo', result }),
        0,
      );
      expect(n('controller_runtime_reconcile_time_seconds_count', { controller: 'echo' })).toBe(reconciles);
      expect(n('workqueue_adds_total', { name: 'echo' })).toBeGreaterThanOrEqual(reconciles);
      expect(n('workqueue_queue_duration_seconds_count', { name: 'echo' })).toBeGreaterThanOrEqual(reconciles);
      expect(n('workqueue_depth', { name: 'echo' })).toBe(0);
    } finally {
      await runner.stop();
    }
  });

  it('reconciles only while leading, and catches up when it becomes the leader', async () => {
    const ns = 'toy-leader';
    await createNs(client, ns);
    let leading = false;
    const runner: RunningController = await runController(client, echoController, { clock, isLeader: () => leading });
    try {
      await client.post(echoes(ns), { apiVersion: `${GROUP}/v1`, kind: 'Echo', metadata: { name: 'e3' }, spec: { entries: { a: '1' } } });
      await new Promise((r) => setTimeout(r, 2000));
      expect((await getEcho(ns, 'e3')).metadata.finalizers ?? []).toEqual([]);
      expect(await configMaps(ns, 'e3')).toEqual([]);
      leading = true;
      await waitFor('ConfigMap created once leading', async () => (await configMaps(ns, 'e3')).length === 1, 60_000);
    } finally {
      await runner.stop();
    }
  });

  it('sends a create marked withStatus together with the status write, the others after it', async () => {
    const ns = 'toy-with-status';
    await createNs(client, ns);
    // The status writes wait for the test: a create sent after the status cannot exist until the gate opens.
    let open = (): void => undefined;
    const gate = new Promise<void>((r) => (open = r));
    const gated = new Proxy(client, {
      get(target, prop) {
        if (prop === 'mergePatch')
          return async (path: string, body: unknown) =>
            path.endsWith('/status') ? gate.then(() => target.mergePatch(path, body)) : target.mergePatch(path, body);
        const v: unknown = Reflect.get(target, prop);
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    });
    const eager: ControllerDefinition<Echo> = {
      ...echoController,
      reconcile: (input) => {
        const r = echoController.reconcile(input);
        return { ...r, actions: r.actions.map((a) => (a.op === 'create' && (a.object.metadata.name ?? '').endsWith('-now') ? { ...a, withStatus: true } : a)) };
      },
    };
    const runner = await runController(gated, eager, { clock });
    try {
      await client.post(echoes(ns), { apiVersion: `${GROUP}/v1`, kind: 'Echo', metadata: { name: 'e4' }, spec: { entries: { now: '1', later: '2' } } });
      await waitFor(
        'the withStatus ConfigMap created while the status write waits',
        async () => (await configMaps(ns, 'e4')).some((c) => c.metadata.name === 'e4-now'),
        60_000,
      );
      expect((await configMaps(ns, 'e4')).map((c) => c.metadata.name)).toEqual(['e4-now']);
      expect((await getEcho(ns, 'e4')).status).toBeUndefined();
      open();
      await waitFor(
        'the other ConfigMap once the status is written',
        async () => (await configMaps(ns, 'e4')).length === 2 && (await getEcho(ns, 'e4')).status !== undefined,
        60_000,
      );
    } finally {
      open();
      await runner.stop();
    }
  });
});
