/**
 * What a training job says about its model (TrainingJob `spec.model`, ADR 0188), turned into the step-time
 * model's job (ADR 0103). It travels from the TrainingJob to its pods as one annotation the scheduler reads:
 * `<kind>/<parameters>/<parallelism>`, e.g. `gpt/1300000000/ddp`.
 */
import { REFERENCE_MODELS, type TrainingModel } from './step-time.ts';
import { err, ok, type Result } from '../result.ts';

export const MODEL_KINDS = ['gpt', 'bert'] as const;
export type ModelKind = (typeof MODEL_KINDS)[number];
export const PARALLELISMS = ['ddp', 'fsdp'] as const;

/** A job's own statement of its model. */
export interface ModelHint {
  /** Trainable parameters. */
  readonly parameters: number;
  /** gpt: decoder, 2048-token sequences, 8 per GPU; bert: encoder, 512-token sequences, 32 per GPU. */
  readonly kind: ModelKind;
  readonly parallelism?: (typeof PARALLELISMS)[number];
}

/** Bounds of `parameters`: a million to ten trillion. */
export const MIN_PARAMETERS = 1e6;
export const MAX_PARAMETERS = 1e13;

/** The step-time job of a hint: depth and width of the reference model closest in size, the kind's batch. */
export function modelFromHint(h: ModelHint): TrainingModel {
  let near: { readonly params: number; readonly layers: number; readonly dModel: number } = REFERENCE_MODELS['gpt-1b'];
  for (const r of Object.values(REFERENCE_MODELS)) if (Math.abs(Math.log(r.params / h.parameters)) < Math.abs(Math.log(near.params / h.parameters))) near = r;
  const seqLen = h.kind === 'bert' ? 512 : 2048;
  const microBatch = h.kind === 'bert' ? 32 : 8;
  return {
    name: `${h.kind}-${h.parameters}`,
    params: h.parameters,
    layers: near.layers,
    dModel: near.dModel,
    seqLen,
    tokensPerGpuPerStep: seqLen * microBatch,
    parallelism: h.parallelism ?? 'ddp',
    gradBytes: 4,
  };
}

export function formatModelHint(h: ModelHint): string {
  return `${h.kind}/${h.parameters}/${h.parallelism ?? 'ddp'}`;
}

/** Parses `<kind>/<parameters>/<parallelism>`; the error says which part is wrong. */
export function parseModelHint(text: string): Result<ModelHint, string> {
  const parts = text.split('/');
  if (parts.length !== 3) return err(`"${text}" is not <kind>/<parameters>/<parallelism> (e.g. gpt/1300000000/ddp)`);
  const [kind, p, par] = parts as [string, string, string];
  if (!(MODEL_KINDS as readonly string[]).includes(kind)) return err(`kind "${kind}" is not one of ${MODEL_KINDS.join(', ')}`);
  const parameters = Number(p);
  if (p.trim() === '' || !Number.isFinite(parameters) || parameters < MIN_PARAMETERS || parameters > MAX_PARAMETERS)
    return err(`parameters "${p}" is not a number from ${MIN_PARAMETERS} to ${MAX_PARAMETERS}`);
  if (!(PARALLELISMS as readonly string[]).includes(par)) return err(`parallelism "${par}" is not one of ${PARALLELISMS.join(', ')}`);
  return ok({ kind: kind as ModelKind, parameters, parallelism: par as (typeof PARALLELISMS)[number] });
}
