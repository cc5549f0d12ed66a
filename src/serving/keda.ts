/**
 * The SITS policy for clusters that run KEDA (issue 12, Deliver 3): a KEDA ScaledObject whose Prometheus trigger
 * asks for the same signal (token demand, from the runtime's own counter names) at the threshold SITS calibrated,
 * targeting the InferenceService's /scale subresource so that KEDA's HPA and SITS never write different replica
 * counts. Pure: the controller renders it from the spec and the calibrated threshold, and re-renders when the
 * threshold moves. Field names: KEDA's ScaledObject (keda.sh/v1alpha1) and its Prometheus scaler
 * (serverAddress, query, threshold, activationThreshold); defaults pollingInterval 30, cooldownPeriod 300.
 */
import { API_GROUP, API_VERSION } from '../api/wire.ts';
import type { RuntimeDefinition } from './runtime.ts';

export interface ScaledObjectInput {
  readonly name: string;
  readonly namespace: string;
  readonly runtime: RuntimeDefinition;
  readonly minReplicas: number;
  readonly maxReplicas: number;
  /** The calibrated tokens/s one replica carries (TokenAutoscaler.tokensPerReplica). */
  readonly tokensPerReplica: number;
  /** Waiting requests per replica, for runtimes without token counters (Triton). */
  readonly queueDepthPerReplica: number;
  readonly prometheusAddress: string;
  /** PromQL label matchers selecting the service's pods; default: its namespace and pod-name prefix. */
  readonly selector?: string;
  readonly scaleDownStabilizationSec: number;
  /** KEDA's TriggerAuthentication for a Prometheus behind auth. */
  readonly authenticationRef?: { readonly name: string; readonly kind: 'TriggerAuthentication' | 'ClusterTriggerAuthentication' };
  readonly pollingIntervalSec?: number;
  readonly cooldownPeriodSec?: number;
  /** minReplicas 0: a query above 0 while requests wait for a service at zero (a gateway's pending requests). */
  readonly activationQuery?: string;
}

export interface ScaledObject {
  readonly apiVersion: 'keda.sh/v1alpha1';
  readonly kind: 'ScaledObject';
  readonly metadata: { readonly name: string; readonly namespace: string; readonly labels: Readonly<Record<string, string>> };
  readonly spec: {
    readonly scaleTargetRef: { readonly apiVersion: string; readonly kind: 'InferenceService'; readonly name: string };
    readonly pollingInterval: number;
    readonly cooldownPeriod: number;
    readonly minReplicaCount: number;
    readonly maxReplicaCount: number;
    readonly advanced: {
      readonly horizontalPodAutoscalerConfig: { readonly behavior: { readonly scaleDown: { readonly stabilizationWindowSeconds: number } } };
    };
    readonly triggers: readonly {
      readonly type: 'prometheus';
      readonly name?: string;
      readonly metricType: 'AverageValue';
      readonly metadata: Readonly<Record<string, string>>;
      readonly authenticationRef?: { readonly name: string; readonly kind: string };
    }[];
  };
}

/** The PromQL SITS scales on, for this runtime: token demand where the engine counts tokens, else its queue. */
export function scalingQuery(runtime: RuntimeDefinition, selector: string): { readonly query: string; readonly signal: 'tokens' | 'queue' } {
  const prompt = runtime.metrics.promptTokensTotal[0];
  const generated = runtime.metrics.generatedTokensTotal[0];
  if (prompt !== undefined && generated !== undefined) {
    return { query: `sum(rate(${prompt}{${selector}}[1m])) + sum(rate(${generated}{${selector}}[1m]))`, signal: 'tokens' };
  }
  const waiting = runtime.metrics.waiting[0];
  if (waiting === undefined) throw new Error(`runtime ${runtime.name} exports neither token counters nor a queue gauge to scale on`);
  return { query: `sum(${waiting}{${selector}})`, signal: 'queue' };
}

/** The name of the activation-only trigger (minReplicas 0 with an activation query). */
export const ACTIVATION_TRIGGER = 'activation';
/** Its scaling threshold: never reached by a count of waiting requests, so it never sizes the service. */
export const ACTIVATION_ONLY_THRESHOLD = '1000000000';

export function renderScaledObject(i: ScaledObjectInput): ScaledObject {
  const selector = i.selector ?? `namespace="${i.namespace}",pod=~"${i.name}-.*"`;
  const { query, signal } = scalingQuery(i.runtime, selector);
  const threshold = signal === 'tokens' ? i.tokensPerReplica : i.queueDepthPerReplica;
  const auth = i.authenticationRef === undefined ? undefined : { name: i.authenticationRef.name, kind: i.authenticationRef.kind };
  return {
    apiVersion: 'keda.sh/v1alpha1',
    kind: 'ScaledObject',
    metadata: { name: i.name, namespace: i.namespace, labels: { [`${API_GROUP}/inference-service`]: i.name } },
    spec: {
      scaleTargetRef: { apiVersion: `${API_GROUP}/${API_VERSION}`, kind: 'InferenceService', name: i.name },
      pollingInterval: i.pollingIntervalSec ?? 30,
      cooldownPeriod: i.cooldownPeriodSec ?? 300,
      minReplicaCount: i.minReplicas,
      maxReplicaCount: i.maxReplicas,
      advanced: { horizontalPodAutoscalerConfig: { behavior: { scaleDown: { stabilizationWindowSeconds: i.scaleDownStabilizationSec } } } },
      triggers: [
        {
          type: 'prometheus',
          metricType: 'AverageValue',
          // KEDA takes the threshold as a string; a whole number keeps it stable between re-renders of the same value.
          metadata: { serverAddress: i.prometheusAddress, query, threshold: String(Math.max(1, Math.round(threshold))), activationThreshold: '0' },
          ...(auth === undefined ? {} : { authenticationRef: auth }),
        },
        // Scale from zero: KEDA's activation phase (0 ↔ 1) is active while any trigger's value exceeds its
        // activationThreshold, and the token query is 0 with no engine running. This trigger only activates: its
        // threshold is out of reach, so the HPA (1 ↔ N) sizes on the token trigger alone.
        ...(i.minReplicas === 0 && i.activationQuery !== undefined
          ? [
              {
                type: 'prometheus' as const,
                name: ACTIVATION_TRIGGER,
                metricType: 'AverageValue' as const,
                metadata: { serverAddress: i.prometheusAddress, query: i.activationQuery, threshold: ACTIVATION_ONLY_THRESHOLD, activationThreshold: '0' },
                ...(auth === undefined ? {} : { authenticationRef: auth }),
              },
            ]
          : []),
      ],
    },
  };
}
