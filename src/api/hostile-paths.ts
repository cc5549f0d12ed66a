// Test support only (fast-check): imported by the fuzz tests, never by the product.
/**
 * Issue 36, deliverable 3: every CRD field that carries a URI or a path, with the parser that decides it, and
 * hostile values for them (traversal, encodings, backslashes, control characters, Unicode look-alikes, absolute
 * paths, lengths around the limit). The fuzz tests put each value into its field and ask `sits lint` and the
 * real apiserver; both must agree with the parser.
 */
import fc from 'fast-check';
import { parseDataUri, parsePlainPath } from './data-uri.ts';
import { EXAMPLE_BATCH_INFERENCE_JOB, EXAMPLE_DATA_PIPELINE, EXAMPLE_INFERENCE_SERVICE, SEED_TRAINING_JOB } from './examples.ts';
import type { ResourceKind } from './kinds.ts';

type Spec = Record<string, unknown>;

export interface PathField {
  readonly kind: ResourceKind;
  /** The field as the apiserver and `sits lint` name it. */
  readonly field: string;
  readonly shape: 'uri' | 'sub-path' | 'mount-path';
  readonly maxLength: number;
  /** A valid object of the kind with `value` in the field. */
  manifest(value: string, name: string): Record<string, unknown>;
}

const withSpec = (base: Record<string, unknown>, name: string, edit: (s: Spec) => void): Record<string, unknown> => {
  const m = structuredClone(base);
  m.metadata = { name };
  edit(m.spec as Spec);
  return m;
};

/** A pipeline whose second stage mounts the first stage's path artifact. */
const pipeline =
  (subPath: string, mountPath: string) =>
  (s: Spec): void => {
    s.stages = [
      {
        name: 'export',
        container: { image: 'registry.sits2026.dev/ml/export:1' },
        outputs: { artifacts: [{ name: 'model', path: { claimName: 'models', subPath } }] },
      },
      {
        name: 'use',
        dependsOn: ['export'],
        container: { image: 'registry.sits2026.dev/ml/use:1' },
        inputs: { artifacts: [{ name: 'model', from: { stage: 'export', artifact: 'model' }, mountPath }] },
      },
    ];
  };

export const PATH_FIELDS: readonly PathField[] = [
  {
    kind: 'BatchInferenceJob',
    field: 'spec.input.uri',
    shape: 'uri',
    maxLength: 2048,
    manifest: (v, n) => withSpec(EXAMPLE_BATCH_INFERENCE_JOB, n, (s) => ((s.input as Spec).uri = v)),
  },
  {
    kind: 'BatchInferenceJob',
    field: 'spec.output.uri',
    shape: 'uri',
    maxLength: 2048,
    manifest: (v, n) => withSpec(EXAMPLE_BATCH_INFERENCE_JOB, n, (s) => ((s.output as Spec).uri = v)),
  },
  {
    kind: 'BatchInferenceJob',
    field: 'spec.model.uri',
    shape: 'uri',
    maxLength: 2048,
    manifest: (v, n) => withSpec(EXAMPLE_BATCH_INFERENCE_JOB, n, (s) => ((s.model as Spec).uri = v)),
  },
  {
    kind: 'BatchInferenceJob',
    field: 'spec.checkpoint.uri',
    shape: 'uri',
    maxLength: 2048,
    manifest: (v, n) => withSpec(EXAMPLE_BATCH_INFERENCE_JOB, n, (s) => (s.checkpoint = { uri: v })),
  },
  {
    kind: 'InferenceService',
    field: 'spec.model.uri',
    shape: 'uri',
    maxLength: 2048,
    manifest: (v, n) => withSpec(EXAMPLE_INFERENCE_SERVICE, n, (s) => ((s.model as Spec).uri = v)),
  },
  {
    kind: 'InferenceService',
    field: 'spec.model.adapters[0].uri',
    shape: 'uri',
    maxLength: 2048,
    manifest: (v, n) => withSpec(EXAMPLE_INFERENCE_SERVICE, n, (s) => ((s.model as Spec).adapters = [{ name: 'support-bot', uri: v }])),
  },
  {
    kind: 'DataPipeline',
    field: 'spec.input.uri',
    shape: 'uri',
    maxLength: 2048,
    manifest: (v, n) => withSpec(EXAMPLE_DATA_PIPELINE, n, (s) => ((s.input as Spec).uri = v)),
  },
  {
    kind: 'DataPipeline',
    field: 'spec.output.uri',
    shape: 'uri',
    maxLength: 2048,
    manifest: (v, n) => withSpec(EXAMPLE_DATA_PIPELINE, n, (s) => ((s.output as Spec).uri = v)),
  },
  {
    kind: 'DataPipeline',
    field: 'spec.stages[0].outputs.artifacts[0].path.subPath',
    shape: 'sub-path',
    maxLength: 1024,
    manifest: (v, n) => withSpec(EXAMPLE_DATA_PIPELINE, n, pipeline(v, '/model')),
  },
  {
    kind: 'DataPipeline',
    field: 'spec.stages[1].inputs.artifacts[0].mountPath',
    shape: 'mount-path',
    maxLength: 4096,
    manifest: (v, n) => withSpec(EXAMPLE_DATA_PIPELINE, n, pipeline('adapters/run-1', v)),
  },
  {
    kind: 'TrainingJob',
    field: 'spec.checkpoint.mountPath',
    shape: 'mount-path',
    maxLength: 1024,
    manifest: (v, n) =>
      withSpec(SEED_TRAINING_JOB, n, (s) => (s.checkpoint = { volume: { claimName: 'ckpt-shared' }, volumeSnapshotClassName: 'csi-snapclass', mountPath: v })),
  },
];

/** What the field's parser says, with the CRD's length bounds (in characters, as the apiserver counts, not UTF-16 units). */
export function accepts(f: PathField, value: string): boolean {
  if ([...value].length > f.maxLength) return false;
  if (f.shape === 'uri') return value.length >= 1 && parseDataUri(value).ok;
  if (f.shape === 'mount-path') return parsePlainPath(value, true).ok;
  return parsePlainPath(value, false).ok;
}

const SEGMENTS = [
  '..',
  '.',
  '',
  '...',
  '%2e%2e',
  '%2E%2e',
  '..%2f',
  '%2f',
  '%00',
  '\\..',
  '..\\..',
  '\0',
  '\n',
  '\r',
  '\t',
  '\x7f',
  '\x1b[2J',
  // Look-alikes: one-dot leader, fullwidth full stop and solidus, division slash, fraction slash, right-to-left override.
  '\u2024\u2024',
  '\uff0e\uff0e',
  '\uff0f',
  '\u2215',
  '\u2044',
  '\u202e',
  '\u00a0',
  'ü',
  '~',
  ' ',
  '{{x}}',
  'a',
  'in',
  'run-1',
  '.x',
  '..x',
  'x..',
  'etc',
  'var',
  'token',
];
const URI_PREFIXES = [
  'pvc://data/',
  'pvc://data',
  's3://bucket/',
  'hf://org/',
  'oci://r/',
  'gs://b',
  'pvc://Data/',
  'pvc:///',
  'PVC://data/',
  'p\u0432c://data/',
  'file:///',
  'pvc:data/',
  '//',
  '/',
  '',
  's3:\\\\b\\',
];
const PATH_PREFIXES = ['', '/', '//', '\\', 'C:\\', '~/', './', '../'];

/** Hostile values for a field: pieces joined by `/` (or a backslash), and lengths around the field's limit. */
export function hostileValue(f: PathField): fc.Arbitrary<string> {
  const segment = fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...SEGMENTS) }, { weight: 1, arbitrary: fc.string({ unit: 'binary-ascii', maxLength: 6 }) });
  const prefix = fc.constantFrom(...(f.shape === 'uri' ? URI_PREFIXES : PATH_PREFIXES));
  const joined = fc
    .tuple(prefix, fc.array(segment, { maxLength: 6 }), fc.constantFrom('/', '/', '/', '\\'), fc.boolean())
    .map(([p, segs, sep, trailing]) => `${p}${segs.join(sep)}${trailing ? '/' : ''}`);
  const long = fc.tuple(fc.integer({ min: -3, max: 3 }), fc.constantFrom('a', '../', 'ab/', '\u{1F600}', '\u{1F600}/')).map(([d, unit]) => {
    const head = f.shape === 'uri' ? 'pvc://data/' : f.shape === 'mount-path' ? '/' : '';
    const want = f.maxLength + d;
    // Cut by characters (an emoji is one character and two UTF-16 units), then no trailing slash.
    return [...(head + unit.repeat(want))].slice(0, want).join('').replace(/\/$/, 'a');
  });
  return fc.oneof({ weight: 9, arbitrary: joined }, { weight: 1, arbitrary: long });
}

/**
 * The length edges every run tries: at the limit and one over, in ASCII and in emoji (one character, two UTF-16
 * units: the apiserver counts characters, and so must the offline check `sits lint` runs).
 */
export function edgeValues(f: PathField): string[] {
  const head = f.shape === 'uri' ? 'pvc://data/' : f.shape === 'mount-path' ? '/' : '';
  const of = (unit: string, n: number): string => [...(head + unit.repeat(n))].slice(0, n).join('');
  return [of('a', f.maxLength), of('a', f.maxLength + 1), of('\u{1F600}', f.maxLength), of('\u{1F600}', f.maxLength + 1)];
}
