/**
 * The RBAC audit table (issue 36, ADR 0175): every Role and ClusterRole the chart can render, its scope, each rule
 * with the reason it carries in rbac.ts (`why`), the values condition under which the role and the rule exist, and
 * who is bound to it. Built from the rendered objects (all optional components on), so it cannot drift from the
 * manifests: a rendered rule without a `why` in its role's source list is an error. Written as rbac.md and
 * rbac.json by `sits deploy --out` and gen-deploy, and as docs/rbac.md for the default values.
 */
import { ACTIVATOR_NAMES } from './activator-manifests.ts';
import { EXTENDER_NAMES } from './extender-manifests.ts';
import { deployDocs, NAMES } from './manifests.ts';
import {
  ACTIVATOR_RULES,
  BATCH_WORKER_RULES,
  CONTROLLER_NODE_QUARANTINE_RULES,
  CONTROLLER_RULES,
  DASHBOARD_VIEWER_RULES,
  DEVICE_PLUGIN_RULES,
  EXTENDER_CALLER_RULES,
  EXTENDER_RULES,
  INFERENCE_CALLER_RULES,
  LEASE_CREATE_RULE,
  LEASE_GET_UPDATE_RULE,
  SCHEDULER_LEASE_READ_RULE,
  METRICS_READER_RULES,
  NODE_AGENT_RULES,
  SCHEDULER_RULES,
  WEBHOOK_CALLER_RULES,
  WEBHOOK_RULES,
  WEBHOOK_SECRET_CREATE_RULE,
  WEBHOOK_SECRET_GET_UPDATE_RULE,
  type NonResourceRule,
  type PolicyRule,
} from './rbac.ts';
import { DEFAULT_NAMESPACE, evaluateDocs, lookup, truthy, type Json } from './tree.ts';
import type { DeployValues } from './values.ts';
import { WEBHOOK_NAMES } from './webhook-manifests.ts';

type SourceRule = PolicyRule | NonResourceRule;

interface RoleSource {
  /** Who holds it, in words. */
  readonly holder: string;
  readonly rules: readonly SourceRule[];
  /** Bound by the cluster's users (no binding in the chart): how. */
  readonly userBound?: string;
}

const lease = [LEASE_CREATE_RULE, LEASE_GET_UPDATE_RULE];

/** Each role's source rules, by `Kind/name`: the only place a rendered rule's reason is looked up. */
const SOURCES: Readonly<Record<string, RoleSource>> = {
  [`ClusterRole/${NAMES.schedulerRole}`]: { holder: 'scheduler (`sits run`)', rules: SCHEDULER_RULES },
  [`Role/${NAMES.leaseRole}`]: { holder: 'scheduler (`sits run`): its leader-election Lease', rules: lease },
  [`ClusterRole/${NAMES.controllersRole}`]: { holder: 'controllers (`sits controllers`)', rules: [...CONTROLLER_RULES, ...CONTROLLER_NODE_QUARANTINE_RULES] },
  [`Role/${NAMES.controllersRole}`]: {
    holder: "controllers (`sits controllers`): their leader-election Lease, and the scheduler's read",
    rules: [...lease, SCHEDULER_LEASE_READ_RULE],
  },
  [`ClusterRole/${NAMES.batchWorkerRole}`]: {
    holder: 'BatchInferenceJob workers (`sits batch-worker`)',
    rules: BATCH_WORKER_RULES,
    userBound: "a RoleBinding in the job's namespace to the workers' ServiceAccount",
  },
  [`ClusterRole/${NAMES.metricsReaderRole}`]: {
    holder: 'metrics scrapers',
    rules: METRICS_READER_RULES,
    userBound: 'a binding to the Prometheus ServiceAccount',
  },
  [`ClusterRole/${NAMES.dashboardViewerRole}`]: {
    holder: 'dashboard viewers',
    rules: DASHBOARD_VIEWER_RULES,
    userBound: 'a binding to the people and tools that open the dashboard',
  },
  [`ClusterRole/${WEBHOOK_NAMES.role}`]: { holder: 'admission webhook (`sits webhook`)', rules: WEBHOOK_RULES },
  [`Role/${WEBHOOK_NAMES.role}`]: {
    holder: 'admission webhook (`sits webhook`): its serving-certificate Secret',
    rules: [WEBHOOK_SECRET_CREATE_RULE, WEBHOOK_SECRET_GET_UPDATE_RULE],
  },
  [`ClusterRole/${WEBHOOK_NAMES.callerRole}`]: { holder: "the apiserver's admission identity (webhook.callers)", rules: WEBHOOK_CALLER_RULES },
  [`ClusterRole/${EXTENDER_NAMES.role}`]: { holder: 'scheduler extender (`sits extender`)', rules: EXTENDER_RULES },
  [`Role/${EXTENDER_NAMES.role}`]: { holder: 'scheduler extender (`sits extender`): its leader-election Lease', rules: lease },
  [`ClusterRole/${EXTENDER_NAMES.callerRole}`]: { holder: "kube-scheduler's identity (extender.callers)", rules: EXTENDER_CALLER_RULES },
  [`ClusterRole/${ACTIVATOR_NAMES.role}`]: { holder: 'activator (`sits activator`)', rules: ACTIVATOR_RULES },
  [`ClusterRole/${ACTIVATOR_NAMES.callerRole}`]: {
    holder: 'callers of InferenceServices through the activator',
    rules: INFERENCE_CALLER_RULES,
    userBound: "a RoleBinding in the service's namespace",
  },
  [`ClusterRole/${NAMES.nodeAgent}`]: { holder: 'node agent (`sits node-agent`, DaemonSet)', rules: [...NODE_AGENT_RULES, ...DEVICE_PLUGIN_RULES] },
};

export interface TableRule {
  readonly apiGroups?: readonly string[];
  readonly resources?: readonly string[];
  readonly resourceNames?: readonly string[];
  readonly nonResourceURLs?: readonly string[];
  readonly verbs: readonly string[];
  /** Values path that must be truthy for the rule to exist (besides the role's own condition). */
  readonly when?: string;
  readonly why: string;
}

export interface TableSubject {
  readonly kind: string;
  readonly name: string;
  readonly namespace?: string;
  /** The binding that grants it: a ClusterRoleBinding grants cluster-wide, a RoleBinding in its namespace only. */
  readonly via: 'ClusterRoleBinding' | 'RoleBinding';
}

export interface TableRole {
  readonly kind: 'ClusterRole' | 'Role';
  readonly name: string;
  /** cluster: a ClusterRole bound by a ClusterRoleBinding (or left to users); namespace: a Role in `namespace`. */
  readonly scope: 'cluster' | 'namespace';
  readonly namespace?: string;
  readonly holder: string;
  /** Values path under which the chart renders the role (always when undefined). */
  readonly when?: string;
  /** Whether the role is rendered with the values the table was made for. */
  readonly enabled: boolean;
  readonly boundTo: readonly TableSubject[];
  readonly userBound?: string;
  readonly rules: readonly TableRule[];
}

type K8sRule = { apiGroups?: string[]; resources?: string[]; resourceNames?: string[]; nonResourceURLs?: string[]; verbs: string[] };
type K8sObj = {
  kind: string;
  metadata: { name: string; namespace?: string };
  rules?: K8sRule[];
  roleRef?: { kind: string; name: string };
  subjects?: { kind: string; name: string; namespace?: string }[];
};

const same = (a: readonly string[] | undefined, b: readonly string[] | undefined): boolean =>
  (a ?? []).length === (b ?? []).length && (a ?? []).every((x, i) => x === b?.[i]);

/** A rendered rule matches a source rule with the same groups, resources and verbs; `resourceNames: []` there stands for names set in the manifest. */
function matches(src: SourceRule, r: K8sRule): boolean {
  if ('nonResourceURLs' in src) return same(src.nonResourceURLs, r.nonResourceURLs) && same(src.verbs, r.verbs);
  if (!same(src.apiGroups, r.apiGroups) || !same(src.resources, r.resources) || !same(src.verbs, r.verbs)) return false;
  if (src.resourceNames === undefined) return r.resourceNames === undefined;
  return src.resourceNames.length === 0 ? (r.resourceNames ?? []).length > 0 : same(src.resourceNames, r.resourceNames);
}

/** The given values with every optional component and every rule-gating switch on: the table shows them all. */
export function allOn(values: DeployValues): DeployValues {
  return {
    ...values,
    controllers: { ...values.controllers, enabled: true, quarantineGpus: true },
    leaderElection: { ...values.leaderElection, enabled: true },
    webhook: { ...values.webhook, enabled: true },
    activator: { ...values.activator, enabled: true },
    extender: { ...values.extender, enabled: true },
    nodeAgent: { ...values.nodeAgent, enabled: true, devicePlugin: true },
  };
}

/** The rendered objects (all optional components on) with the document each came from. */
function rendered(values: DeployValues, namespace: string): { when?: string; object: K8sObj }[] {
  const docs = deployDocs();
  const whenOf = new Map(docs.map((d) => [d.file, d.when]));
  return evaluateDocs(docs, allOn(values), namespace).map((d) => {
    const when = whenOf.get(d.file);
    return { ...(when === undefined ? {} : { when }), object: d.object as unknown as K8sObj };
  });
}

/** The table for these values: every role the chart can render, each rule with its reason. */
export function rbacTable(values: DeployValues, namespace: string = DEFAULT_NAMESPACE): TableRole[] {
  const objs = rendered(values, namespace);
  const bindings = objs.map((o) => o.object).filter((o) => o.kind === 'ClusterRoleBinding' || o.kind === 'RoleBinding');
  return objs
    .filter((o) => o.object.kind === 'ClusterRole' || o.object.kind === 'Role')
    .map(({ when, object: o }) => {
      const key = `${o.kind}/${o.metadata.name}`;
      const source = SOURCES[key];
      if (source === undefined) throw new Error(`rbac table: ${key} has no entry in rbac-table.ts SOURCES`);
      const rules = (o.rules ?? []).map((r): TableRule => {
        const src = source.rules.find((s) => matches(s, r));
        if (src === undefined) throw new Error(`rbac table: ${key} renders a rule with no reason in rbac.ts: ${JSON.stringify(r)}`);
        const ruleWhen = 'when' in src ? src.when : undefined;
        return { ...r, ...(ruleWhen === undefined ? {} : { when: ruleWhen }), why: src.why };
      });
      const boundTo = bindings
        .filter(
          (b) =>
            b.roleRef?.kind === o.kind && b.roleRef.name === o.metadata.name && (o.kind === 'ClusterRole' || b.metadata.namespace === o.metadata.namespace),
        )
        .flatMap((b) =>
          (b.subjects ?? []).map((s): TableSubject => ({
            kind: s.kind,
            name: s.name,
            ...(s.namespace === undefined ? {} : { namespace: s.namespace }),
            via: b.kind as TableSubject['via'],
          })),
        );
      return {
        kind: o.kind as TableRole['kind'],
        name: o.metadata.name,
        scope: o.kind === 'Role' ? 'namespace' : 'cluster',
        ...(o.metadata.namespace === undefined ? {} : { namespace: o.metadata.namespace }),
        holder: source.holder,
        ...(when === undefined ? {} : { when }),
        enabled: when === undefined || truthy(lookup(values, when)),
        boundTo,
        ...(source.userBound === undefined ? {} : { userBound: source.userBound }),
        rules,
      };
    });
}

const code = (xs: readonly string[] | undefined): string => (xs ?? []).map((x) => `\`${x === '' ? '""' : x}\``).join(', ');
const cell = (s: string): string => s.replaceAll('|', '\\|').replaceAll('\n', ' ');

/** The table as Markdown (one section per role, one row per rule). */
export function rbacMarkdown(table: readonly TableRole[], values: DeployValues): string {
  const out = [
    "<!-- Generated by scripts/gen-deploy.ts from src/deploy/rbac.ts (each rule's `why`) and the rendered chart; do not edit by hand. -->",
    '# RBAC: every role SITS installs, and why',
    '',
    "Every Role and ClusterRole the chart can render (optional components included), with each rule's reason as it is",
    'written next to the rule in `src/deploy/rbac.ts`. **Condition**: the values under which the role (or a rule) is',
    'rendered; **enabled**: whether it is with the values this table was made for. Scope `cluster` is a ClusterRole',
    'bound by a ClusterRoleBinding (or bound by you); `namespace` is a Role in one namespace. ADR 0175.',
    '',
    "Each component runs under its own ServiceAccount, bound only to its own roles: the scheduler's holds none of the",
    "controllers' rights (issue 30). `sits run --controllers` runs both in one process under one identity, which then",
    'needs both roles: a development mode (`sits dev`, single-process trials), never used by the chart.',
    '',
    '| Role | Kind | Scope | Holder | Condition | Enabled | Bound to |',
    '| --- | --- | --- | --- | --- | --- | --- |',
    ...table.map(
      (r) =>
        `| [${r.name}](#${r.kind.toLowerCase()}-${r.name}) | ${r.kind} | ${r.scope}${r.namespace === undefined ? '' : ` (${r.namespace})`} | ${cell(r.holder)} | ${r.when === undefined ? 'always' : `\`${r.when}\``} | ${r.enabled ? 'yes' : 'no'} | ${cell(subjectsText(r))} |`,
    ),
  ];
  for (const r of table) {
    out.push(
      '',
      `## ${r.kind} ${r.name}`,
      '',
      `${r.holder}. Scope: ${r.scope}${r.namespace === undefined ? '' : ` (namespace ${r.namespace})`}. Condition: ${r.when === undefined ? 'always' : `\`${r.when}\``}. Bound to: ${subjectsText(r)}.`,
      '',
    );
    const nonResource = r.rules.some((x) => x.nonResourceURLs !== undefined);
    out.push(
      nonResource ? '| URLs | Verbs | Why |' : '| API groups | Resources | Names | Verbs | Condition | Why |',
      nonResource ? '| --- | --- | --- |' : '| --- | --- | --- | --- | --- | --- |',
    );
    for (const x of r.rules)
      out.push(
        x.nonResourceURLs !== undefined
          ? `| ${code(x.nonResourceURLs)} | ${code(x.verbs)} | ${cell(x.why)} |`
          : `| ${code(x.apiGroups)} | ${code(x.resources)} | ${x.resourceNames === undefined ? 'any' : code(x.resourceNames)} | ${code(x.verbs)} | ${x.when === undefined ? '' : `\`${x.when}\`${truthy(lookup(values, x.when)) ? '' : ' (off)'}`} | ${cell(x.why)} |`,
      );
  }
  return `${out.join('\n')}\n`;
}

function subjectsText(r: TableRole): string {
  const chart = r.boundTo.map((s) => `${s.kind} ${s.namespace === undefined ? '' : `${s.namespace}/`}${s.name} (${s.via})`);
  return [...chart, ...(r.userBound === undefined ? [] : [`by you: ${r.userBound}`])].join('; ') || 'nobody';
}

/** The table as JSON (for audit tooling). */
export function rbacJson(table: readonly TableRole[]): string {
  return `${JSON.stringify({ generatedBy: 'scripts/gen-deploy.ts (src/deploy/rbac-table.ts)', roles: table as unknown as Json }, null, 2)}\n`;
}
