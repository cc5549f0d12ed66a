/**
 * The TrainingJob controller as a definition for kube/controllers/controller-runner.ts: what it watches (TrainingJobs; the Pods,
 * Services and PodGroups labelled with a job's name) and an adapter from the runner's generic input and actions to
 * the TrainingJob reconcile's own (model.ts). Pure: no client, no clock, no timers.
 */
import { withDefaults } from '../../api/validate.ts';
import { API_GROUP_VERSION, FINALIZER, KIND, LABEL } from '../../api/wire.ts';
import type { ApplyFailure, ControllerAction, ControllerDefinition, ControllerInput, OwnedResource, ResourceType } from '../../api/controller.ts';
import type { PodGroupObject, PodObject, ServiceObject } from '../kube-objects.ts';
import type { Action, ApplyError, ClaimObject, ControllerConfig, TrainingJobObject, VolumeSnapshotObject } from './model.ts';
import { reconcileTrainingJob } from './reconcile.ts';
import { SNAPSHOT_API_VERSION } from './checkpoints.ts';

export const TRAINING_JOB_RESOURCE: ResourceType = { apiVersion: API_GROUP_VERSION, kind: KIND.trainingJob, plural: 'trainingjobs' };

const POD: OwnedResource = { apiVersion: 'v1', kind: 'Pod', plural: 'pods', awaitWatch: true };
const SERVICE: OwnedResource = { apiVersion: 'v1', kind: 'Service', plural: 'services' };
const POD_GROUP: OwnedResource = { apiVersion: API_GROUP_VERSION, kind: 'PodGroup', plural: 'podgroups' };
/** spec.checkpoint: the job's snapshots and its claim (claimTemplate), labelled with the job like the rest. */
const VOLUME_SNAPSHOT: OwnedResource = {
  apiVersion: SNAPSHOT_API_VERSION,
  kind: 'VolumeSnapshot',
  plural: 'volumesnapshots',
  whenAbsent: 'checkpoints disabled; install the CSI snapshot CRDs to enable',
};
const CLAIM: OwnedResource = { apiVersion: 'v1', kind: 'PersistentVolumeClaim', plural: 'persistentvolumeclaims' };

/** The reconcile's action kinds: the labels of the generic actions, so that failures come back under these names. */
const ACTION_KINDS: ReadonlySet<string> = new Set<Action['kind'] | 'writeStatus'>([
  'addFinalizer',
  'removeFinalizer',
  'createService',
  'deleteService',
  'applyPodGroup',
  'deletePodGroup',
  'createPod',
  'deletePod',
  'deleteJob',
  'createVolumeSnapshot',
  'patchVolumeSnapshot',
  'deleteVolumeSnapshot',
  'createClaim',
  'deleteClaim',
  'annotatePod',
  'event',
  'writeStatus',
]);

const isApplyError = (f: ApplyFailure): f is ApplyFailure & ApplyError => ACTION_KINDS.has(f.action);

/** One reconcile action as a runner action, labelled with its own kind (grouping and failures stay per kind). */
export function toControllerAction(a: Action): ControllerAction {
  switch (a.kind) {
    case 'addFinalizer':
    case 'removeFinalizer':
      return { op: a.kind, finalizer: FINALIZER.trainingJobCleanup };
    case 'createPod':
      return { op: 'create', kind: POD.kind, object: a.pod };
    case 'deletePod':
      return { op: 'delete', kind: POD.kind, name: a.name, uid: a.uid };
    case 'createService':
      return { op: 'create', kind: SERVICE.kind, object: a.service };
    case 'deleteService':
      return { op: 'delete', kind: SERVICE.kind, name: a.name, uid: a.uid };
    case 'applyPodGroup': {
      const pg = a.podGroup;
      if (!a.exists) return { op: 'create', kind: POD_GROUP.kind, object: pg, label: a.kind };
      const spec = pg.spec;
      // Every field the controller sets, null for those it leaves out (merge patch removes them).
      const patch = {
        spec: {
          minMember: spec?.minMember,
          queue: spec?.queue ?? null,
          priorityClassName: spec?.priorityClassName ?? null,
          topology: spec?.topology === undefined ? null : { required: spec.topology.required ?? null, preferred: spec.topology.preferred ?? null },
        },
      };
      return { op: 'patch', kind: POD_GROUP.kind, name: pg.metadata.name ?? '', patch, label: a.kind };
    }
    case 'deletePodGroup':
      return { op: 'delete', kind: POD_GROUP.kind, name: a.name, uid: a.uid };
    case 'deleteJob':
      return { op: 'deleteSelf', label: a.kind };
    case 'event':
      return { op: 'event', type: a.type, reason: a.reason, message: a.message };
    case 'createVolumeSnapshot':
      // The snapshot is asked for the moment the commit is seen (000 §2.5), not one status round trip later: its
      // name is fixed by the cycle, so a status write that conflicts only makes the next reconcile find it there.
      return { op: 'create', kind: VOLUME_SNAPSHOT.kind, object: a.snapshot, label: a.kind, withStatus: true };
    case 'patchVolumeSnapshot':
      return { op: 'patch', kind: VOLUME_SNAPSHOT.kind, name: a.name, patch: a.patch, label: a.kind };
    case 'deleteVolumeSnapshot':
      return { op: 'delete', kind: VOLUME_SNAPSHOT.kind, name: a.name, uid: a.uid, label: a.kind };
    case 'createClaim':
      return { op: 'create', kind: CLAIM.kind, object: a.claim, label: a.kind };
    case 'deleteClaim':
      return { op: 'delete', kind: CLAIM.kind, name: a.name, uid: a.uid, label: a.kind };
    case 'annotatePod':
      return { op: 'patch', kind: POD.kind, name: a.name, patch: { metadata: { annotations: a.annotations } }, label: a.kind };
  }
}

/** The TrainingJob controller for the given configuration (backoff, cooldowns, GPU model aliases, placeholder image). */
export function trainingJobController(cfg: ControllerConfig): ControllerDefinition<TrainingJobObject> {
  return {
    primary: TRAINING_JOB_RESOURCE,
    owned: [POD, SERVICE, POD_GROUP, VOLUME_SNAPSHOT, CLAIM],
    ownerLabel: LABEL.trainingJob,
    component: 'sits-trainingjob-controller',
    reconcile(input: ControllerInput<TrainingJobObject>) {
      const errors = input.lastErrors?.filter(isApplyError);
      const res = reconcileTrainingJob(
        {
          job: withDefaults('TrainingJob', input.object) as TrainingJobObject,
          pods: (input.owned.get(POD.kind) ?? []) as readonly PodObject[],
          services: (input.owned.get(SERVICE.kind) ?? []) as readonly ServiceObject[],
          podGroups: (input.owned.get(POD_GROUP.kind) ?? []) as readonly PodGroupObject[],
          volumeSnapshots: (input.owned.get(VOLUME_SNAPSHOT.kind) ?? []) as readonly VolumeSnapshotObject[],
          claims: (input.owned.get(CLAIM.kind) ?? []) as readonly ClaimObject[],
          nowMs: input.nowMs,
          ...(errors === undefined ? {} : { lastErrors: errors }),
        },
        cfg,
      );
      return { ...res, actions: res.actions.map(toControllerAction) };
    },
  };
}
