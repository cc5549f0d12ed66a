/**
 * autoscaling.mode keda (issue 12, Deliver 3; ADR 0112): the controller keeps one KEDA ScaledObject per service,
 * rendered by serving/keda.ts from the spec and the threshold SITS calibrated, and removes it when the mode
 * changes. KEDA's HPA then writes replicas through the InferenceService's /scale subresource, and SITS's own
 * autoscaler stays out (sitsMayScale is false). Without KEDA's CRDs the create answers 404: the service then says
 * so in the KedaScaledObject condition and nothing else changes (its replicas keep serving at spec.replicas).
 * Pure: the calibrated threshold comes in through the config's `thresholds` port.
 */
import type { ApplyFailure } from '../../api/controller.ts';
import { TOKEN_AUTOSCALER_DEFAULTS } from '../../serving/autoscale/token.ts';
import { ACTIVATION_TRIGGER, renderScaledObject } from '../../serving/keda.ts';
import { runtimeFor } from '../../serving/runtimes/index.ts';
import type { ConditionUpdate } from '../conditions.ts';
import { findCondition } from '../conditions.ts';
import { isOwnedBy } from '../kube-objects.ts';
import type { Action, AutoscalerThresholds, InferenceServiceObject, OwnedScaledObject, ScaledObjectResource } from './model.ts';
import { isvcName, isvcNamespace, ownerReference } from './pods.ts';

export const SCALED_OBJECT_CONDITION = 'KedaScaledObject';

/** Waiting requests per replica where the runtime counts no tokens and the spec sets no queue target (Triton). */
export const DEFAULT_QUEUE_DEPTH_PER_REPLICA = 4;

/** The calibrated threshold is read again this often, so the ScaledObject follows the calibration. */
export const THRESHOLD_RESYNC_MS = TOKEN_AUTOSCALER_DEFAULTS.calibrationSec * 1000;

export interface KedaPlan {
  readonly actions: readonly Action[];
  /** Set (keda mode) or only updated where present (other modes). */
  readonly condition?: ConditionUpdate;
  readonly clearIfPresent?: ConditionUpdate;
  readonly requeueAfterMs?: number;
}

/** The ScaledObject the spec asks for; undefined outside mode keda (or for a runtime the spec check refuses). */
export function desiredScaledObject(s: InferenceServiceObject, thresholds: AutoscalerThresholds | undefined): OwnedScaledObject | undefined {
  const a = s.spec.autoscaling;
  const runtime = runtimeFor(s.spec.runtime);
  if (a?.mode !== 'keda' || a.keda === undefined || runtime === undefined) return undefined;
  const so = renderScaledObject({
    name: isvcName(s),
    namespace: isvcNamespace(s),
    runtime,
    minReplicas: s.spec.minReplicas,
    maxReplicas: s.spec.maxReplicas ?? Math.max(1, s.spec.replicas),
    // The threshold SITS calibrated; before there is one, the spec's target, else the SITS starting point.
    tokensPerReplica: thresholds?.tokensPerReplica ?? a.tokensPerSecondPerReplica ?? TOKEN_AUTOSCALER_DEFAULTS.initialThreshold,
    queueDepthPerReplica: thresholds?.queueDepthPerReplica ?? a.queueDepthPerReplica ?? DEFAULT_QUEUE_DEPTH_PER_REPLICA,
    prometheusAddress: a.keda.serverAddress,
    ...(a.keda.labelMatchers === undefined ? {} : { selector: a.keda.labelMatchers }),
    ...(a.keda.authenticationRef === undefined ? {} : { authenticationRef: a.keda.authenticationRef }),
    ...(a.keda.activationQuery === undefined ? {} : { activationQuery: a.keda.activationQuery }),
    scaleDownStabilizationSec: a.scaleDownStabilizationSeconds,
    pollingIntervalSec: a.keda.pollingInterval,
    cooldownPeriodSec: a.keda.cooldownPeriod,
  });
  return { ...so, metadata: { ...so.metadata, ownerReferences: [ownerReference(s)] } };
}

/** The parts of a ScaledObject's spec the controller sets (the apiserver or KEDA may add others). */
function managedSpec(spec: Readonly<Record<string, unknown>> | undefined): string {
  const x = spec ?? {};
  const advanced = x.advanced as { horizontalPodAutoscalerConfig?: { behavior?: { scaleDown?: { stabilizationWindowSeconds?: unknown } } } } | undefined;
  return JSON.stringify([
    x.scaleTargetRef,
    x.pollingInterval,
    x.cooldownPeriod,
    x.minReplicaCount,
    x.maxReplicaCount,
    advanced?.horizontalPodAutoscalerConfig?.behavior?.scaleDown?.stabilizationWindowSeconds,
    x.triggers,
  ]);
}

/** What the condition says about scale from zero (ADR 0126). */
function fromZero(so: OwnedScaledObject): string {
  if (so.spec.minReplicaCount !== 0) return '';
  const act = so.spec.triggers.find((t) => t.name === ACTIVATION_TRIGGER);
  return act === undefined
    ? '; minReplicas 0 without spec.autoscaling.keda.activationQuery: KEDA scales to zero after cooldownPeriod without tokens, but nothing can activate it from zero (no engine exports the token metric at zero replicas)'
    : `; activation from zero on ${act.metadata.query ?? '?'} > 0`;
}

/**
 * What the operator lets services name in a ScaledObject (issue 36, finding 2): KEDA, not the tenant, talks to the
 * server, with the credentials of the authentication named. A Prometheus address and a ClusterTriggerAuthentication
 * (cluster-wide, shared secrets) are used only when listed here; a TriggerAuthentication in the service's own
 * namespace is the tenant's own and stays allowed. Empty lists (the default) refuse every keda server.
 */
export interface KedaAllowList {
  readonly servers: readonly string[];
  readonly clusterAuth: readonly string[];
}

export const NO_KEDA_ALLOWED: KedaAllowList = { servers: [], clusterAuth: [] };

/** The allow-list from the controller flags (comma-separated); the first bad item's complaint otherwise. */
export function parseKedaAllowList(servers: string | undefined, clusterAuth: string | undefined): KedaAllowList | { readonly error: string } {
  const items = (v: string | undefined): string[] =>
    (v ?? '')
      .split(',')
      .map((x) => x.trim())
      .filter((x) => x !== '');
  const s = items(servers);
  const bad = s.find((u) => !/^https?:\/\/[^\s]+$/.test(u) || !URL.canParse(u));
  if (bad !== undefined) return { error: `--keda-allowed-servers: ${JSON.stringify(bad)} is not an http(s) URL` };
  const a = items(clusterAuth);
  const badName = a.find((n) => !/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(n));
  if (badName !== undefined) return { error: `--keda-allowed-cluster-auth: ${JSON.stringify(badName)} is not a ClusterTriggerAuthentication name` };
  return { servers: s, clusterAuth: a };
}

/** One spelling per address: parsed, lower-case host, no trailing slash (so `http://p:9090/` is `http://p:9090`). */
export function normalServer(url: string): string {
  try {
    return new URL(url).href.replace(/\/+$/, '');
  } catch {
    return url;
  }
}

/** Why the service may not have its ScaledObject; undefined when the allow-list admits it. */
export function kedaRefusal(
  s: InferenceServiceObject,
  allow: KedaAllowList,
): { readonly reason: 'KedaServerNotAllowed' | 'KedaClusterAuthNotAllowed'; readonly message: string } | undefined {
  const k = s.spec.autoscaling?.keda;
  if (s.spec.autoscaling?.mode !== 'keda' || k === undefined) return undefined;
  const servers = new Set(allow.servers.map(normalServer));
  if (!servers.has(normalServer(k.serverAddress))) {
    return {
      reason: 'KedaServerNotAllowed',
      message: `spec.autoscaling.keda.serverAddress ${k.serverAddress} is not one the operator allows (controller flag --keda-allowed-servers: ${allow.servers.length === 0 ? 'none set' : allow.servers.join(', ')}); no ScaledObject is kept`,
    };
  }
  const ref = k.authenticationRef;
  if (ref?.kind === 'ClusterTriggerAuthentication' && !allow.clusterAuth.includes(ref.name)) {
    return {
      reason: 'KedaClusterAuthNotAllowed',
      message: `spec.autoscaling.keda.authenticationRef: ClusterTriggerAuthentication ${ref.name} is not one the operator allows (controller flag --keda-allowed-cluster-auth: ${allow.clusterAuth.length === 0 ? 'none set' : allow.clusterAuth.join(', ')}); use a TriggerAuthentication in namespace ${isvcNamespace(s)}. No ScaledObject is kept`,
    };
  }
  return undefined;
}

const ACTIONS = ['createScaledObject', 'patchScaledObject', 'deleteScaledObject'];

export function planScaledObject(p: {
  readonly isvc: InferenceServiceObject;
  /** ScaledObjects labelled with the service's name (only those it owns are touched). */
  readonly scaledObjects: readonly ScaledObjectResource[];
  readonly thresholds: AutoscalerThresholds | undefined;
  readonly lastErrors: readonly ApplyFailure[] | undefined;
  readonly hasThresholdPort: boolean;
  /** Unset: nothing allowed (the controller's default). */
  readonly allow?: KedaAllowList;
}): KedaPlan {
  const s = p.isvc;
  const owned = p.scaledObjects.filter((o) => isOwnedBy(o, s.metadata.uid) && o.metadata.deletionTimestamp === undefined);
  const refused = kedaRefusal(s, p.allow ?? NO_KEDA_ALLOWED);
  if (refused !== undefined) {
    // Checked before rendering: a ScaledObject already kept (an earlier spec, a narrower allow-list) goes too.
    const actions: Action[] = owned.map((o) => ({ kind: 'deleteScaledObject', name: o.metadata.name ?? '', uid: o.metadata.uid ?? '' }));
    const said = findCondition(s.status?.conditions, SCALED_OBJECT_CONDITION);
    if (said?.reason !== refused.reason || said.message !== refused.message)
      actions.push({ kind: 'event', type: 'Warning', reason: refused.reason, message: refused.message });
    return { actions, condition: { type: SCALED_OBJECT_CONDITION, status: 'False', ...refused } };
  }
  const want = desiredScaledObject(s, p.thresholds);
  const actions: Action[] = [];
  if (want === undefined) {
    for (const o of owned) actions.push({ kind: 'deleteScaledObject', name: o.metadata.name ?? '', uid: o.metadata.uid ?? '' });
    return {
      actions,
      clearIfPresent: {
        type: SCALED_OBJECT_CONDITION,
        status: 'False',
        reason: 'NotKedaMode',
        message: `spec.autoscaling.mode is ${s.spec.autoscaling?.mode ?? 'unset'}: no ScaledObject is kept`,
      },
    };
  }
  const have = owned.find((o) => o.metadata.name === want.metadata.name);
  for (const o of owned) if (o !== have) actions.push({ kind: 'deleteScaledObject', name: o.metadata.name ?? '', uid: o.metadata.uid ?? '' });
  if (have === undefined) actions.push({ kind: 'createScaledObject', scaledObject: want });
  else if (managedSpec(have.spec) !== managedSpec(want.spec as unknown as Record<string, unknown>)) {
    actions.push({ kind: 'patchScaledObject', name: want.metadata.name, patch: { spec: want.spec } });
  }

  const trigger = want.spec.triggers[0]?.metadata;
  const errors = (p.lastErrors ?? []).filter((e) => ACTIONS.includes(e.action));
  const missingCrd = errors.find((e) => e.status === 404 && e.action === 'createScaledObject');
  let condition: ConditionUpdate;
  if (missingCrd !== undefined) {
    condition = {
      type: SCALED_OBJECT_CONDITION,
      status: 'False',
      reason: 'KedaNotInstalled',
      message: `spec.autoscaling.mode keda: the apiserver does not serve keda.sh/v1alpha1 ScaledObjects (404: KEDA's CRDs are not installed); install KEDA or set spec.autoscaling.mode to sits or external. No ScaledObject exists and nothing scales the service: its replicas stay at spec.replicas`,
    };
  } else if (errors.length > 0) {
    condition = {
      type: SCALED_OBJECT_CONDITION,
      status: 'False',
      reason: 'ScaledObjectRejected',
      message: errors.map((e) => `${e.action} ${e.name ?? ''}: ${e.status} ${e.message}`).join('; '),
    };
  } else if (have === undefined) {
    condition = { type: SCALED_OBJECT_CONDITION, status: 'Unknown', reason: 'Creating', message: `creating ScaledObject ${want.metadata.name}` };
  } else {
    condition = {
      type: SCALED_OBJECT_CONDITION,
      status: 'True',
      reason: 'Applied',
      message: `ScaledObject ${want.metadata.name}: prometheus trigger threshold ${trigger?.threshold ?? '?'} on ${trigger?.query ?? '?'}, replicas ${want.spec.minReplicaCount}..${want.spec.maxReplicaCount}${fromZero(want)}`,
    };
  }
  return { actions, condition, ...(p.hasThresholdPort ? { requeueAfterMs: THRESHOLD_RESYNC_MS } : {}) };
}
