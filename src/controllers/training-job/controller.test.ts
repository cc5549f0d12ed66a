import { describe, expect, it } from 'vitest';
import { actionLabel } from '../../api/controller.ts';
import { DEFAULT_CONTROLLER_CONFIG, type Action } from './model.ts';
import { toControllerAction, trainingJobController } from './controller.ts';
import { FINALIZER } from '../../api/wire.ts';
import { FakeCluster, makeJob } from './testing.ts';

const meta = { name: 'x', namespace: 'ns' };
const every: Action[] = [
  { kind: 'addFinalizer' },
  { kind: 'removeFinalizer' },
  { kind: 'createService', service: { metadata: meta } },
  { kind: 'deleteService', name: 'x', uid: 'u1' },
  { kind: 'applyPodGroup', podGroup: { metadata: meta, spec: { minMember: 2 } }, exists: false },
  { kind: 'applyPodGroup', podGroup: { metadata: meta, spec: { minMember: 2, queue: 'q' } }, exists: true },
  { kind: 'deletePodGroup', name: 'x', uid: 'u2' },
  { kind: 'createPod', pod: { metadata: meta } },
  { kind: 'deletePod', name: 'x', uid: 'u3' },
  { kind: 'deleteJob' },
  { kind: 'event', type: 'Normal', reason: 'Created', message: 'm' },
];

describe('TrainingJob definition', () => {
  it('labels every generic action with the reconcile action kind (grouping and ReconcileError names unchanged)', () => {
    expect(every.map((a) => actionLabel(toControllerAction(a)))).toEqual(every.map((a) => a.kind));
  });

  it('maps PodGroup updates to a merge patch that clears what the controller no longer sets', () => {
    expect(toControllerAction(every[5] as Action)).toEqual({
      op: 'patch',
      kind: 'PodGroup',
      name: 'x',
      patch: { spec: { minMember: 2, queue: 'q', priorityClassName: null, topology: null } },
      label: 'applyPodGroup',
    });
    expect(toControllerAction({ kind: 'addFinalizer' })).toEqual({ op: 'addFinalizer', finalizer: FINALIZER.trainingJobCleanup });
  });

  it('reconciles through the definition as the reconcile does directly, and feeds failures back', () => {
    const c = new FakeCluster(makeJob({ replicas: 2, resources: { 'nvidia.com/gpu': 1 } }));
    const def = trainingJobController(DEFAULT_CONTROLLER_CONFIG);
    const input = {
      object: c.job,
      owned: new Map([
        ['Pod', [...c.pods.values()]],
        ['Service', [...c.services.values()]],
        ['PodGroup', [...c.groups.values()]],
      ]),
      nowMs: c.now,
    };
    const direct = c.observe();
    expect(direct.actions.length).toBeGreaterThan(0);
    expect(def.reconcile(input)).toEqual({ ...direct, actions: direct.actions.map(toControllerAction) });
    const refused = { action: 'createService', name: 'bert', status: 422, reason: 'Invalid', message: 'bad port' };
    expect(def.reconcile({ ...input, lastErrors: [refused] }).status?.phase).toBe('Failed');
    // A failure under a label the reconcile does not know is not passed on.
    expect(def.reconcile({ ...input, lastErrors: [{ ...refused, action: 'createConfigMap' }] })).toEqual(def.reconcile(input));
  });
});
