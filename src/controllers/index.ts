// Workload controllers: pure reconcile functions and the definitions kube/controllers/controller-runner.ts drives
// (app/controllers.ts starts them).
export { trainingJobController, toControllerAction, TRAINING_JOB_RESOURCE } from './training-job/controller.ts';
export { reconcileTrainingJob, backoffDelayMs, isRetryableExitCode, sizes } from './training-job/reconcile.ts';
export { DEFAULT_CONTROLLER_CONFIG } from './training-job/model.ts';
export type { Action, ApplyError, ControllerConfig, Observed, ReconcileResult, TrainingJobObject } from './training-job/model.ts';
export { inferenceServiceController, INFERENCE_SERVICE_RESOURCE } from './inference-service/controller.ts';
export { reconcileInferenceService, planRollout, CONDITION as INFERENCE_SERVICE_CONDITION } from './inference-service/reconcile.ts';
export { replicaWriter, sitsMayScale } from './inference-service/autoscaling.ts';
export { NO_ENGINE } from './inference-service/model.ts';
export type { ClusterFacts, EnginePort, ReplicaEngineState, AdapterObservation, InferenceServiceObject } from './inference-service/model.ts';
export { dataPipelineController, DATA_PIPELINE_RESOURCE } from './data-pipeline/controller.ts';
export { reconcileDataPipeline } from './data-pipeline/reconcile.ts';
export type { DataPipelineObject } from './data-pipeline/model.ts';
