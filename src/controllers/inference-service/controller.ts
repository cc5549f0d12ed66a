/**
 * The InferenceService controller as a definition for kube/controllers/controller-runner.ts: it watches InferenceServices and
 * the Pods and Services labelled with a service's name, and maps the reconcile's actions onto the runner's generic
 * ones (labels createPod, deletePod, createService, patchService, createScaledObject, patchScaledObject,
 * deleteScaledObject, so failures come back under those names).
 * Pure: the cluster facts and the engine view come through the ports in the configuration.
 */
import { withDefaults } from '../../api/validate.ts';
import { API_GROUP_VERSION, KIND, LABEL } from '../../api/wire.ts';
import type { ControllerAction, ControllerDefinition, ControllerInput, OwnedResource, ResourceType } from '../../api/controller.ts';
import type { PodObject, ServiceObject } from '../kube-objects.ts';
import type { Action, InferenceControllerConfig, InferenceServiceObject, ScaledObjectResource } from './model.ts';
import { reconcileInferenceService } from './reconcile.ts';

export const INFERENCE_SERVICE_RESOURCE: ResourceType = { apiVersion: API_GROUP_VERSION, kind: KIND.inferenceService, plural: 'inferenceservices' };

// Pods are counted (replicas, surge): the runner waits for the watch to show what it created and deleted.
const POD: OwnedResource = { apiVersion: 'v1', kind: 'Pod', plural: 'pods', awaitWatch: true };
const SERVICE: OwnedResource = { apiVersion: 'v1', kind: 'Service', plural: 'services' };
// autoscaling.mode keda. Where KEDA is not installed the runner says so once and looks again with backoff (up to 5 min); the cache stays empty.
export const SCALED_OBJECT: OwnedResource = {
  apiVersion: 'keda.sh/v1alpha1',
  kind: 'ScaledObject',
  plural: 'scaledobjects',
  whenAbsent: 'no ScaledObject can be made for autoscaling.mode keda; install KEDA to enable',
};

export function toControllerAction(a: Action): ControllerAction {
  switch (a.kind) {
    case 'createPod':
      return { op: 'create', kind: POD.kind, object: a.pod };
    case 'deletePod':
      return { op: 'delete', kind: POD.kind, name: a.name, uid: a.uid };
    case 'createService':
      return { op: 'create', kind: SERVICE.kind, object: a.service };
    case 'patchService':
      return { op: 'patch', kind: SERVICE.kind, name: a.name, patch: a.patch };
    case 'createScaledObject':
      return { op: 'create', kind: SCALED_OBJECT.kind, object: a.scaledObject };
    case 'patchScaledObject':
      return { op: 'patch', kind: SCALED_OBJECT.kind, name: a.name, patch: a.patch };
    case 'deleteScaledObject':
      return { op: 'delete', kind: SCALED_OBJECT.kind, name: a.name, uid: a.uid };
    case 'event':
      return { op: 'event', type: a.type, reason: a.reason, message: a.message };
  }
}

export function inferenceServiceController(cfg: InferenceControllerConfig): ControllerDefinition<InferenceServiceObject> {
  return {
    primary: INFERENCE_SERVICE_RESOURCE,
    owned: [POD, SERVICE, SCALED_OBJECT],
    ownerLabel: LABEL.inferenceService,
    component: 'sits-inferenceservice-controller',
    reconcile(input: ControllerInput<InferenceServiceObject>) {
      const isvc = withDefaults('InferenceService', input.object) as InferenceServiceObject;
      const keda = isvc.spec.autoscaling?.mode === 'keda';
      const thresholds = keda ? cfg.thresholds?.(isvc.metadata.namespace ?? 'default', isvc.metadata.name ?? '') : undefined;
      const res = reconcileInferenceService(
        {
          isvc,
          pods: (input.owned.get(POD.kind) ?? []) as readonly PodObject[],
          services: (input.owned.get(SERVICE.kind) ?? []) as readonly ServiceObject[],
          scaledObjects: (input.owned.get(SCALED_OBJECT.kind) ?? []) as readonly ScaledObjectResource[],
          ...(thresholds === undefined ? {} : { thresholds }),
          hasThresholdPort: keda && cfg.thresholds !== undefined,
          nowMs: input.nowMs,
          facts: cfg.clusterFacts(),
          engine: cfg.engine,
          ...(input.lastErrors === undefined ? {} : { lastErrors: input.lastErrors }),
        },
        cfg,
      );
      return { ...res, actions: res.actions.map(toControllerAction) };
    },
  };
}
