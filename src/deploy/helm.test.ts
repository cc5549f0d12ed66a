/**
 * The chart checked by Helm itself (`helm lint`, `helm template`, built by tools/helm/ensure.mjs): rendered
 * with its values.yaml and with overrides, it gives the same objects, field for field, as the plain builder
 * (src/deploy/manifests.ts) with the same values merged by resolveValues.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chartObjects, NOTES_READER, plainObjects } from './bundle.ts';
import { DASHBOARD_FILE, grafanaDashboard } from './grafana-dashboard.ts';
import { ensureHelm, helmNotes, helmTemplate, removeHelmScratch, runHelm, valuesFile, writeChart } from './testing/helm.ts';
import { HEAP_NODE_OPTION, maxOldSpaceMiB } from './heap-cap.ts';
import { goFloat, type Json } from './tree.ts';
import { resolveValues, type DeployValues } from './values.ts';

type Obj = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string }; [k: string]: unknown };
type Dep = Obj & {
  metadata: { namespace: string };
  spec: { replicas: number; template: { spec: Record<string, unknown> & { containers: { image: string; imagePullPolicy: string; args: string[] }[] } } };
};
const key = (o: Json): string => {
  const x = o as Obj;
  return `${x.apiVersion}/${x.kind}/${x.metadata.namespace ?? ''}/${x.metadata.name}`;
};
const byKey = (list: readonly Json[]): Map<string, Json> => {
  const m = new Map(list.map((o) => [key(o), o]));
  expect(m.size, 'no two objects with the same kind and name').toBe(list.length);
  return m;
};
const kinds = (list: readonly Json[]): string[] => list.map((o) => (o as Obj).kind).filter((k) => k !== 'CustomResourceDefinition');
const deploymentOf = (list: readonly Json[]): Dep => {
  const d = list.find((o) => (o as Obj).kind === 'Deployment' && (o as Obj).metadata.name === 'sits-scheduler');
  if (d === undefined) throw new Error('no Deployment');
  return d as unknown as Dep;
};
const withValues = (over: Record<string, unknown>, ns?: string): DeployValues => {
  const r = resolveValues(over, ns);
  if (!r.ok) throw new Error(r.errors.join('\n'));
  return r.value;
};

// Every conditional and value of the templates (both sides of each `if`), as -f files Helm merges over values.yaml.
// Each variant is rendered in its namespace (helm -n; the plain builder's namespace argument).
const NAMESPACE: Record<number, string> = { 1: 'sched' };
const VARIANTS: [string, Record<string, unknown>][] = [
  [
    'single replica without leader election, PDB, controllers or webhook',
    { replicas: 1, leaderElection: { enabled: false }, podDisruptionBudget: { enabled: false }, controllers: { enabled: false }, webhook: { enabled: false } },
  ],
  [
    'another namespace, image, profile, port, placement and resources',
    {
      image: { repository: 'example.org:5000/team/sits', tag: 'v2.0.0-rc.1', digest: `sha256:${'0f'.repeat(32)}`, pullPolicy: 'Always' },
      imagePullSecrets: [{ name: 'regcred' }],
      podAnnotations: { 'example.com/scrape': 'skip' },
      podLabels: { team: 'ml-platform' },
      affinity: {},
      serviceMonitor: { enabled: true, interval: '15s', labels: { release: 'kube-prometheus-stack' } },
      controllers: { replicas: 1, quarantineGpus: true, podLabels: { tier: 'control' }, priorityClassName: 'high', affinity: {} },
      profile: 'binpack',
      metrics: { port: 9464 },
      grafanaDashboard: { enabled: true },
      replicas: 3,
      leaderElection: { leaseDurationSeconds: 30, leaseNames: ['sits-scheduler', 'sits-controllers'] },
      priorityClassName: 'system-cluster-critical',
      nodeSelector: { 'node-role.kubernetes.io/control-plane': '' },
      tolerations: [{ key: 'node-role.kubernetes.io/control-plane', operator: 'Exists', effect: 'NoSchedule' }],
      resources: { requests: { cpu: '1', memory: '1Gi' }, limits: { memory: '4Gi' } },
      webhook: {
        mode: 'enforce',
        failurePolicy: 'Fail',
        port: 10443,
        disable: 'a-rule,b-rule',
        excludeNamespaces: ['sched'],
        callers: [{ kind: 'Group', name: 'system:masters', apiGroup: 'rbac.authorization.k8s.io' }],
      },
    },
  ],
  ['the node agent with its device plugin', { nodeAgent: { enabled: true } }],
  [
    'every component, NetworkPolicies narrowed to a Prometheus, the control plane and an ingress',
    {
      activator: { enabled: true },
      extender: { enabled: true },
      nodeAgent: { enabled: true },
      networkPolicy: {
        metricsFrom: [
          {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } },
            podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } },
          },
        ],
        webhookFrom: [{ ipBlock: { cidr: '10.0.0.0/24' } }],
        extenderFrom: [{ ipBlock: { cidr: '10.0.0.0/24', except: ['10.0.0.128/25'] } }],
        activatorFrom: [{ namespaceSelector: { matchExpressions: [{ key: 'ingress', operator: 'Exists' }] } }],
      },
    },
  ],
  ['no NetworkPolicies', { networkPolicy: { enabled: false } }],
  [
    'the activator, three replicas, a short hold, another Secret and its own token audience',
    {
      activator: {
        enabled: true,
        replicas: 3,
        port: 9443,
        holdTimeoutSeconds: 30,
        maxHeldPerService: 50,
        tlsSecret: 'act-tls',
        apiAudiences: 'sits-activator',
      },
    },
  ],
  [
    'the extender, three replicas, another Secret and caller',
    {
      extender: {
        enabled: true,
        replicas: 3,
        port: 9888,
        tlsSecret: 'my-tls',
        callers: [{ kind: 'Group', name: 'sits:schedulers', apiGroup: 'rbac.authorization.k8s.io' }],
      },
    },
  ],
  [
    'the node agent for labels only, elsewhere, on the default runtime',
    {
      nodeAgent: {
        enabled: true,
        devicePlugin: false,
        namespace: 'gpu-agents',
        intervalSeconds: 300,
        nvidiaSmi: '/usr/local/nvidia/bin/nvidia-smi',
        runtimeClassName: '',
        nodeSelector: { 'nvidia.com/gpu.present': 'true' },
        tolerations: [],
      },
    },
  ],
];

describe('the Helm chart, by the real helm', () => {
  let helm: string;
  let chart: string;
  // A first run may build helm from the Go module proxy (minutes); scripts/test.mjs builds it before the tests.
  beforeAll(async () => {
    helm = await ensureHelm();
    chart = writeChart();
  }, 1_200_000);
  afterAll(removeHelmScratch);

  it('is helm v3', () => {
    const r = runHelm(helm, ['version', '--short']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^v3\.\d+\.\d+/);
  });

  it('helm lint --strict passes, with values.yaml and with each override', () => {
    for (const args of [[], ...VARIANTS.map(([, over]) => ['-f', valuesFile(over)])]) {
      const r = runHelm(helm, ['lint', chart, '--strict', ...args]);
      expect(r.code, `${args.join(' ')}\n${r.stdout}${r.stderr}`).toBe(0);
      expect(r.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
      expect(r.stdout).not.toMatch(/\[(WARNING|ERROR)\]/);
    }
  });

  it('helm template with values.yaml gives exactly the plain manifests (deploy/sits.yaml)', () => {
    const rendered = helmTemplate(helm, chart, ['--namespace', 'sits-system']);
    expect(byKey(rendered)).toEqual(byKey(chartObjects()));
    // The plain file has the Namespace besides.
    expect(plainObjects().length - rendered.length).toBe(1);
  });

  it.each(VARIANTS.map(([what, over], i) => [what, over, NAMESPACE[i] ?? 'sits-system'] as const))(
    'helm template -f gives the plain manifests with the same values: %s',
    (_what, over, ns) => {
      const values = withValues(over, ns);
      const rendered = helmTemplate(helm, chart, ['--namespace', ns, '-f', valuesFile(over)]);
      expect(byKey(rendered)).toEqual(byKey(chartObjects(values, ns)));
    },
  );

  it("starts the scheduler's Node with the old-space cap as a share of its container's memory limit", () => {
    const c = deploymentOf(helmTemplate(helm, chart, [])).spec.template.spec.containers[0] as unknown as {
      env: { name: string; value?: string }[];
      resources: { limits: { memory: string } };
    };
    expect(c.env.filter((e) => e.name === 'NODE_OPTIONS')).toEqual([{ name: 'NODE_OPTIONS', value: HEAP_NODE_OPTION }]);
    // The limit the share is of: 2Gi gives the 1024 MiB the kube bench runs SITS with.
    expect(c.resources.limits.memory).toBe('2Gi');
    expect(maxOldSpaceMiB(c.resources.limits.memory)).toBe(1024);
  });

  it('helm template --set / --set-string gives the plain manifests with the same values', () => {
    const rendered = helmTemplate(helm, chart, [
      '--set',
      'replicas=4',
      '--set-string',
      'image.tag=1.2.3',
      '--set',
      'profile=binpack',
      '--set',
      'podDisruptionBudget.minAvailable=2',
    ]);
    const values = withValues({ replicas: 4, image: { tag: '1.2.3' }, profile: 'binpack', podDisruptionBudget: { minAvailable: 2 } });
    expect(byKey(rendered)).toEqual(byKey(chartObjects(values, 'default')));
    const dep = deploymentOf(rendered);
    expect(dep.spec.replicas).toBe(4);
    expect(dep.spec.template.spec.containers[0]?.image).toBe('registry.sits2026.dev/sits/sits:1.2.3');
    expect(dep.metadata.namespace).toBe('default');
    expect(dep.spec.template.spec.containers[0]?.args).toContain('--profile=binpack');
  });

  it('the overrides really change what Helm renders', () => {
    const single = helmTemplate(helm, chart, ['-f', valuesFile(VARIANTS[0]?.[1])]);
    expect(kinds(single)).not.toContain('PodDisruptionBudget');
    expect(kinds(single)).not.toContain('Role');
    // The scheduler's role, the metrics reader's and the dashboard viewer's (no controllers, no webhook).
    expect(kinds(single).filter((k) => k === 'ClusterRole')).toHaveLength(3);
    expect(deploymentOf(single).spec.template.spec.containers[0]?.args).toEqual([
      'run',
      '--profile=sits',
      '--metrics-port=8080',
      '--identity=$(POD_NAME)',
      '--no-leader-elect',
    ]);
    expect(kinds(single)).not.toContain('ServiceMonitor');
    const other = helmTemplate(helm, chart, ['-n', 'sched', '-f', valuesFile(VARIANTS[1]?.[1])]);
    expect(kinds(other)).not.toContain('Namespace');
    const dep = deploymentOf(other);
    expect(dep.metadata.namespace).toBe('sched');
    expect(dep.spec.replicas).toBe(3);
    expect(dep.spec.template.spec.containers[0]?.image).toBe(`example.org:5000/team/sits@sha256:${'0f'.repeat(32)}`);
    expect(dep.spec.template.spec.imagePullSecrets).toEqual([{ name: 'regcred' }]);
    expect((dep.spec.template as unknown as { metadata: { labels: Record<string, string> } }).metadata.labels.team).toBe('ml-platform');
    const sm = other.find((o) => (o as Obj).kind === 'ServiceMonitor') as unknown as {
      metadata: { namespace: string; labels: Record<string, string> };
      spec: { namespaceSelector: unknown; endpoints: Record<string, unknown>[] };
    };
    expect(sm.metadata).toMatchObject({ namespace: 'sched', labels: { release: 'kube-prometheus-stack' } });
    expect(sm.spec.namespaceSelector).toEqual({ matchNames: ['sched'] });
    expect(sm.spec.endpoints[0]).toMatchObject({
      port: 'metrics',
      scheme: 'https',
      interval: '15s',
      bearerTokenFile: '/var/run/secrets/kubernetes.io/serviceaccount/token',
      tlsConfig: { insecureSkipVerify: true },
    });
    expect(dep.spec.template.spec.containers[0]?.imagePullPolicy).toBe('Always');
    expect(dep.spec.template.spec.priorityClassName).toBe('system-cluster-critical');
    expect(dep.spec.template.spec.tolerations).toHaveLength(1);
    const svc = other.find((o) => (o as Obj).kind === 'Service' && (o as Obj).metadata.name === 'sits-scheduler-metrics') as unknown as {
      metadata: { annotations: Record<string, string> };
    };
    expect(svc.metadata.annotations['prometheus.io/port']).toBe('9464');
    // One ServiceMonitor scrapes both metrics Services (their ports are both named metrics); the controllers' is
    // their health port, there only with controllers.enabled.
    expect((sm.spec as unknown as { selector: unknown }).selector).toEqual({
      matchLabels: { 'app.kubernetes.io/name': 'sits' },
      matchExpressions: [{ key: 'app.kubernetes.io/component', operator: 'In', values: ['scheduler', 'controllers'] }],
    });
    const ctlSvc = other.find((o) => (o as Obj).kind === 'Service' && (o as Obj).metadata.name === 'sits-controllers-metrics') as unknown as {
      spec: { ports: { name: string; targetPort: string }[] };
    };
    expect(ctlSvc.spec.ports).toEqual([expect.objectContaining({ name: 'metrics', targetPort: 'health' })]);
    expect(single.some((o) => (o as Obj).metadata.name === 'sits-controllers-metrics')).toBe(false);
    // The Grafana dashboard: only when enabled, labelled for the sidecar, the JSON intact through Helm's YAML.
    expect(kinds(single)).not.toContain('ConfigMap');
    const cm = other.find((o) => (o as Obj).kind === 'ConfigMap') as unknown as {
      metadata: { namespace: string; labels: Record<string, string> };
      data: Record<string, string>;
    };
    expect([cm.metadata.namespace, cm.metadata.labels.grafana_dashboard]).toEqual(['sched', '1']);
    expect(JSON.parse(cm.data[DASHBOARD_FILE] ?? '')).toEqual(grafanaDashboard());
    const hook = other.find((o) => (o as Obj).kind === 'Deployment' && (o as Obj).metadata.name === 'sits-webhook') as unknown as {
      spec: { template: { spec: { containers: { args: string[] }[] } } };
    };
    expect(hook.spec.template.spec.containers[0]?.args).toEqual(
      expect.arrayContaining(['--mode=enforce', '--port=10443', '--namespace=sched', '--disable=a-rule,b-rule']),
    );
    const vwc = other.find((o) => (o as Obj).kind === 'ValidatingWebhookConfiguration') as unknown as {
      webhooks: { failurePolicy: string; namespaceSelector: unknown }[];
    };
    expect(vwc.webhooks[0]?.failurePolicy).toBe('Fail');
    expect(vwc.webhooks[0]?.namespaceSelector).toEqual({
      matchExpressions: [
        { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['sched'] },
        { key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: ['sched'] },
      ],
    });
    // The controllers under their own ServiceAccount, nodes patch granted by quarantineGpus.
    const ctlRole = other.find((o) => (o as Obj).kind === 'ClusterRole' && (o as Obj).metadata.name === 'sits-controllers') as unknown as {
      rules: { resources: string[]; verbs: string[] }[];
    };
    expect(ctlRole.rules.filter((r) => r.resources.includes('nodes')).flatMap((r) => r.verbs)).toContain('patch');
    // ADR 0174: the workloads' pod-rights policy comes with the controllers; the node agent's names its account in its namespace.
    expect(kinds(single)).not.toContain('ValidatingAdmissionPolicy');
    expect(
      other
        .filter((o) => (o as Obj).kind.startsWith('ValidatingAdmissionPolicy'))
        .map((o) => (o as Obj).metadata.name)
        .sort(),
    ).toEqual(['sits-webhook-secret', 'sits-webhook-secret', 'sits-workloads-need-pod-rights', 'sits-workloads-need-pod-rights']);
    const agent = helmTemplate(helm, chart, ['-f', valuesFile(VARIANTS.find(([name]) => name.startsWith('the node agent for labels only'))?.[1])]);
    const vap = agent.find((o) => (o as Obj).kind === 'ValidatingAdmissionPolicy' && (o as Obj).metadata.name === 'sits-node-agent-restriction') as unknown as {
      spec: { matchConditions: { expression: string }[] };
    };
    expect(vap.spec.matchConditions).toEqual([
      { name: 'node-agent', expression: "request.userInfo.username == 'system:serviceaccount:gpu-agents:sits-node-agent'" },
    ]);
  });

  it.each([
    ['the defaults', 'sits-system', []],
    [
      'another namespace and port, webhook enforcing, extender on',
      'sched',
      ['--set', 'metrics.port=9464', '--set', 'webhook.mode=enforce', '--set', 'extender.enabled=true'],
    ],
  ] as [string, string, string[]][])('NOTES.txt: its commands name what the chart renders (%s)', (_what, ns, args) => {
    const notes = helmNotes(helm, chart, ['-n', ns, ...args]);
    const objects = helmTemplate(helm, chart, ['-n', ns, ...args]);
    const named = (kind: string, name: string): Obj | undefined =>
      objects.find((o) => (o as Obj).kind === kind && (o as Obj).metadata.name === name) as Obj | undefined;
    const commands = notes
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => /^(kubectl|curl|sits|TOKEN=)/.test(l));
    expect(commands.length).toBeGreaterThanOrEqual(9);
    const port = /metrics\.port=(\d+)/.exec(args.join(' '))?.[1] ?? '8080';
    for (const c of commands) {
      // Every namespace named is the release's.
      for (const m of c.matchAll(/(?:-n |namespace |--serviceaccount=)([a-z0-9-]+)/g)) expect(m[1], c).toBe(ns);
      for (const m of c.matchAll(/--clusterrole=([a-z0-9-]+)/g)) expect(named('ClusterRole', m[1] ?? ''), c).toBeDefined();
      for (const m of c.matchAll(/svc\/([a-z0-9-]+) (\d+):(\d+)/g)) {
        const svc = named('Service', m[1] ?? '') as unknown as { metadata: { namespace: string }; spec: { ports: { port: number }[] } } | undefined;
        expect(svc?.metadata.namespace, c).toBe(ns);
        expect(
          svc?.spec.ports.map((p) => String(p.port)),
          c,
        ).toContain(m[3]);
        expect(m[2], c).toBe(port);
      }
      for (const m of c.matchAll(/https:\/\/localhost:(\d+)/g)) expect(m[1], c).toBe(port);
      for (const m of c.matchAll(/-l ([^ ]+)=([^ ]+)/g))
        expect(
          objects.some(
            (o) => (o as { spec?: { template?: { metadata?: { labels?: Record<string, string> } } } }).spec?.template?.metadata?.labels?.[m[1] ?? ''] === m[2],
          ),
          c,
        ).toBe(true);
      // kubectl get <short name>: a CRD of the chart has it.
      const get = /^kubectl get ([a-z]+)$/.exec(c)?.[1];
      if (get !== undefined)
        expect(
          objects.some((o) => (o as { spec?: { names?: { shortNames?: string[] } } }).spec?.names?.shortNames?.includes(get) === true),
          c,
        ).toBe(true);
    }
    // The token is minted for the reader the notes create, and the reader is bound to the metrics reader role.
    expect(commands).toContain(`kubectl -n ${ns} create serviceaccount ${NOTES_READER}`);
    expect(commands).toContain(`TOKEN=$(kubectl -n ${ns} create token ${NOTES_READER})`);
    expect(commands.some((c) => c.includes('--clusterrole=sits-metrics-reader'))).toBe(true);
    expect(commands.some((c) => c.startsWith('curl -k -H "Authorization: Bearer $TOKEN" https://localhost:'))).toBe(true);
    expect(notes.includes('The webhook audits')).toBe(!args.includes('webhook.mode=enforce'));
    expect(notes.includes(`https://sits-extender.${ns}.svc`)).toBe(args.includes('extender.enabled=true'));
  });

  it('values.schema.json makes helm template and helm lint fail on bad values, naming them', () => {
    const bad = valuesFile({ replicas: 0, metrics: { port: 80 }, image: { pullPolicy: 'Sometimes' }, unknown: 1 });
    const t = runHelm(helm, ['template', 'sits', chart, '-f', bad]);
    expect(t.code).not.toBe(0);
    expect(t.stdout).toBe('');
    expect(t.stderr).toContain("values don't meet the specifications of the schema");
    for (const where of ['/replicas', '/metrics/port', '/image/pullPolicy', 'unknown']) expect(t.stderr, where).toContain(where);
    const l = runHelm(helm, ['lint', chart, '-f', bad]);
    expect(l.code).not.toBe(0);
    expect(l.stdout).toContain('[ERROR] values.yaml');
    // One wrong type alone is enough.
    const tag = runHelm(helm, ['template', 'sits', chart, '--set', 'image.tag=2']);
    expect(tag.code).not.toBe(0);
    expect(tag.stderr).toContain('/image/tag');
  });

  it('`| quote` prints numbers of values.yaml as goFloat does (the plain manifests use goFloat)', () => {
    const numbers = [8080, 65535, 123456, 1234567, 1000000, 0.5, 0.0001, 0.00001, -2, 0];
    const dir = mkdtempSync(join(tmpdir(), 'sits-quote-chart-'));
    try {
      mkdirSync(join(dir, 'templates'));
      writeFileSync(join(dir, 'Chart.yaml'), 'apiVersion: v2\nname: quote\nversion: 0.1.0\n');
      writeFileSync(join(dir, 'values.yaml'), numbers.map((n, i) => `n${i}: ${n}\n`).join(''));
      writeFileSync(
        join(dir, 'templates/cm.yaml'),
        `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: q\ndata:\n${numbers.map((_, i) => `  n${i}: {{ .Values.n${i} | quote }}\n`).join('')}`,
      );
      const [cm] = helmTemplate(helm, dir) as { data: Record<string, string> }[];
      expect(numbers.map((_, i) => cm?.data[`n${i}`])).toEqual(numbers.map(goFloat));
      expect(cm?.data.n3).toBe('1.234567e+06');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
