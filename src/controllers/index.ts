// Workload controllers: pure reconcile functions and the runner that drives them against kube-apiserver.
export { startControllers } from './runner.ts';
export type { ControllerOptions, Controllers } from './runner.ts';
export { reconcileTrainingJob, backoffDelayMs, isRetryableExitCode, sizes } from './training-job/reconcile.ts';
export { DEFAULT_CONTROLLER_CONFIG } from './training-job/model.ts';
export type { Action, ApplyError, ControllerConfig, Observed, ReconcileResult, TrainingJobObject } from './training-job/model.ts';
