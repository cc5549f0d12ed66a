/**
 * Adapter stages (issue 17 Deliver 3, ADR 0137): a LoRA adapter hot-swapped into an InferenceService the user runs.
 * The pipeline server-side-applies one entry of the service's spec.model.adapters under a field manager of its own
 * per stage, so the user's fields stay the user's and taking the entry away again (on pipeline deletion, policy
 * Remove) removes only what the stage added. It then reads the serving loop's per-replica status (ADR 0110/0125):
 * the stage succeeds once every ready replica reports the adapter Loaded and fails naming the replica that reports
 * it Failed. The pipeline never creates, owns or deletes the service.
 */
import type { ApplyFailure, ControllerAction, WireObject } from '../../api/controller.ts';
import type { PipelineStage } from '../../api/schema/data-pipeline.ts';
import { API_GROUP_VERSION, FINALIZER, KIND } from '../../api/wire.ts';
import type { DataPipelineObject, TargetService } from './model.ts';

export const ADAPTER_FINALIZER = FINALIZER.dataPipelineAdapters;

/** One manager per stage: two stages (or two pipelines) adding adapters to one service never drop each other's. */
export function adapterFieldManager(pipeline: string, stage: string): string {
  return `sits-datapipeline/${pipeline}/${stage}`;
}

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** The services the pipeline's adapter stages name (the runner watches those for it). */
export function adapterTargets(p: DataPipelineObject): string[] {
  return [...new Set((p.spec.stages ?? []).flatMap((s) => (s.adapter === undefined ? [] : [s.adapter.inferenceService])))];
}

/** The apply configuration of the stage: only the adapter entry (and nothing at all to give it up). */
export function adapterApply(
  p: DataPipelineObject,
  stage: string,
  service: string,
  adapter?: { readonly name: string; readonly uri: string },
): ControllerAction {
  return {
    op: 'apply',
    kind: KIND.inferenceService,
    name: service,
    fieldManager: adapterFieldManager(p.metadata.name ?? '', stage),
    object: {
      apiVersion: API_GROUP_VERSION,
      kind: KIND.inferenceService,
      metadata: { name: service },
      ...(adapter === undefined ? {} : { spec: { model: { adapters: [{ name: adapter.name, uri: adapter.uri }] } } }),
    } as WireObject,
  };
}

export type AdapterProgress =
  | { readonly kind: 'wait'; readonly message: string; readonly actions: ControllerAction[] }
  | { readonly kind: 'fail'; readonly message: string; readonly permanent: boolean }
  | { readonly kind: 'done'; readonly message: string; readonly parameters: Readonly<Record<string, string>> };

/**
 * One step of a running adapter stage. `stage` has its parameters substituted; `svc` is the named service if it
 * exists; `errors` are the runner's failures of the last apply.
 */
export function adapterStep(
  p: DataPipelineObject,
  stage: PipelineStage,
  index: number,
  svc: TargetService | undefined,
  errors: readonly ApplyFailure[] | undefined,
): AdapterProgress {
  const a = stage.adapter;
  if (a === undefined) throw new Error('adapterStep: not an adapter stage');
  const field = `spec.stages[${index}].adapter`;
  if (a.name.length > 63 || !DNS_LABEL.test(a.name))
    return { kind: 'fail', permanent: true, message: `${field}.name: "${a.name}" is not a DNS label (lowercase letters, digits and '-', at most 63)` };
  if (a.uri.trim() === '') return { kind: 'fail', permanent: true, message: `${field}.uri: empty after substitution` };
  const target = `InferenceService ${a.inferenceService}`;
  if (svc === undefined)
    return {
      kind: 'wait',
      message: `waiting for ${target} (not found in namespace ${p.metadata.namespace ?? 'default'}; the pipeline adds adapters to a service, it does not create one)`,
      actions: [],
    };
  if (svc.metadata.deletionTimestamp !== undefined) return { kind: 'fail', permanent: true, message: `${target} is being deleted` };
  const err = errors?.find((e) => e.action === `apply${KIND.inferenceService}` && e.name === a.inferenceService);
  if (err !== undefined && err.status === 409)
    return {
      kind: 'fail',
      permanent: true,
      message: `${target}: adapter ${a.name} is set by another field manager to another uri (${err.message}); the pipeline does not take over fields it did not set`,
    };
  if (err !== undefined && err.status >= 400 && err.status < 500 && err.status !== 429)
    return { kind: 'fail', permanent: true, message: `${target}: cannot add adapter ${a.name}: ${err.message}` };

  const actions: ControllerAction[] = [];
  const listed = (svc.spec?.model?.adapters ?? []).find((x) => x.name === a.name);
  if (listed?.uri !== a.uri) {
    // Policy Remove needs the finalizer before anything is added, or a deletion in between would leave the entry.
    const needsFinalizer = a.onPipelineDeletion === 'Remove' && !(p.metadata.finalizers ?? []).includes(ADAPTER_FINALIZER);
    actions.push(needsFinalizer ? { op: 'addFinalizer', finalizer: ADAPTER_FINALIZER } : adapterApply(p, stage.name, a.inferenceService, a));
    return { kind: 'wait', message: `adding adapter ${a.name} to ${target}${err === undefined ? '' : ` (last try: ${err.message})`}`, actions };
  }
  const ready = (svc.status?.replicaStatuses ?? []).filter((r) => r.ready);
  if (ready.length === 0) return { kind: 'wait', message: `waiting for a ready replica of ${target}`, actions };
  const state = (r: (typeof ready)[number]): { readonly state: string; readonly message?: string } | undefined =>
    (r.adapters ?? []).find((x) => x.name === a.name);
  const failed = ready.find((r) => state(r)?.state === 'Failed');
  if (failed !== undefined)
    return {
      kind: 'fail',
      permanent: false,
      message: `${target}: replica ${failed.name} failed to load adapter ${a.name}${state(failed)?.message === undefined ? '' : `: ${state(failed)?.message ?? ''}`}`,
    };
  const pending = ready.filter((r) => state(r)?.state !== 'Loaded');
  if (pending.length > 0)
    return {
      kind: 'wait',
      message: `adapter ${a.name} loaded on ${ready.length - pending.length} of ${ready.length} ready replicas of ${target}; waiting for ${pending.map((r) => r.name).join(', ')}`,
      actions,
    };
  return {
    kind: 'done',
    message: `adapter ${a.name} loaded on all ${ready.length} ready replicas of ${target} (${ready.map((r) => r.name).join(', ')}) without a restart`,
    parameters: { adapter: a.name, inferenceService: a.inferenceService },
  };
}

/**
 * A pipeline being deleted: give up each Remove stage's entry (an empty apply under its manager removes what it
 * owned and nothing else), and drop the finalizer once no service still lists one of its managers.
 */
export function adapterCleanup(p: DataPipelineObject, services: readonly TargetService[]): ControllerAction[] {
  if (!(p.metadata.finalizers ?? []).includes(ADAPTER_FINALIZER)) return [];
  const actions: ControllerAction[] = [];
  for (const s of p.spec.stages) {
    if (s.adapter === undefined || s.adapter.onPipelineDeletion !== 'Remove') continue;
    const svc = services.find((x) => x.metadata.name === s.adapter?.inferenceService);
    const manager = adapterFieldManager(p.metadata.name ?? '', s.name);
    if (svc !== undefined && svc.metadata.deletionTimestamp === undefined && (svc.metadata.managedFields ?? []).some((m) => m.manager === manager))
      actions.push(adapterApply(p, s.name, s.adapter.inferenceService));
  }
  return actions.length > 0 ? actions : [{ op: 'removeFinalizer', finalizer: ADAPTER_FINALIZER }];
}
