// Workload controllers: pure reconcile functions and the definitions kube/controller-runner.ts drives
// (app/controllers.ts starts them).
export { trainingJobController, toControllerAction, TRAINING_JOB_RESOURCE } from './training-job/controller.ts';
export { reconcileTrainingJob, backoffDelayMs, isRetryableExitCode, sizes } from './training-job/reconcile.ts';
export { DEFAULT_CONTROLLER_CONFIG } from './training-job/model.ts';
export type { Action, ApplyError, ControllerConfig, Observed, ReconcileResult, TrainingJobObject } from './training-job/model.ts';
export { FINALIZER, TJ_LABEL, TJ_ANNOTATION } from './training-job/names.ts';
