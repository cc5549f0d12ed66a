// Shared schema pieces for every SITS kind. TypeBox schemas are JSON Schema: the same objects give the
// TypeScript types (Static), runtime validation (Value.Errors) and, through ../structural.ts, the CRDs.
import {
  Type,
  type ObjectOptions,
  type SchemaOptions,
  type Static,
  type TLiteral,
  type TObject,
  type TProperties,
  type TSchema,
  type TUnion,
} from '@sinclair/typebox';
import { DATA_URI_PATTERN } from '../data-uri.ts';
import { NON_NEGATIVE_QUANTITY_PATTERN, isWholeQuantity, type QuantityValue } from '../quantity.ts';
import { API_GROUP_VERSION, GPU_RESOURCE } from '../wire.ts';

// ---------------------------------------------------------------------------------------------
// CEL rules with a TypeScript mirror
// ---------------------------------------------------------------------------------------------

/** How the apiserver reports a failed rule (x-kubernetes-validations[].reason). */
export type CelReason = 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';

/**
 * A CEL rule (x-kubernetes-validations) and its TypeScript mirror. `check` receives the value at the
 * schema node after defaulting, like CEL's `self`, and returns true when the rule holds. Keeping both
 * side by side is what keeps offline validation (`sits validate`) and the apiserver in agreement.
 */
export interface CelRule<T = unknown> {
  rule: string;
  message: string;
  /** Relative path of the field the apiserver names in the error, e.g. `.replicas`. */
  fieldPath?: string;
  reason?: CelReason;
  check: (self: T) => boolean;
}

/** The CEL rule as serialised into the CRD. */
export interface ValidationRule {
  rule: string;
  message: string;
  fieldPath?: string;
  reason?: CelReason;
}

/** Where the TypeScript mirrors live on a schema node; a symbol, so it never reaches the CRD YAML. */
export const CelChecks: unique symbol = Symbol.for('sits.api.cel-checks');

interface WithCelChecks {
  [CelChecks]?: readonly CelRule<never>[];
  'x-kubernetes-validations'?: readonly ValidationRule[];
}

/** Attaches CEL rules (and their TypeScript mirrors) to a schema node. */
export function withRules<S extends TSchema>(schema: S, rules: readonly CelRule<Static<S>>[]): S {
  const prev = schema as S & WithCelChecks;
  const serialised: ValidationRule[] = rules.map(({ check: _check, ...rule }) => rule);
  return {
    ...schema,
    'x-kubernetes-validations': [...(prev['x-kubernetes-validations'] ?? []), ...serialised],
    [CelChecks]: [...(prev[CelChecks] ?? []), ...rules],
  };
}

/** Reads the TypeScript mirrors attached by withRules. */
export function celChecksOf(schema: object): readonly CelRule[] {
  return ((schema as WithCelChecks)[CelChecks] ?? []) as readonly CelRule[];
}

// ---------------------------------------------------------------------------------------------
// Small constructors
// ---------------------------------------------------------------------------------------------

/** A closed object: unknown fields are errors offline, as with `kubectl apply --validate=strict`. */
export function Obj<P extends TProperties>(properties: P, options: ObjectOptions & { description: string }): TObject<P> {
  return Type.Object(properties, { additionalProperties: false, ...options });
}

type LiteralTuple<V extends readonly string[]> = { -readonly [I in keyof V]: TLiteral<V[I]> };

/** A string enum; TypeBox validates it as a union of literals, the generator emits `enum`. */
export function StringEnum<const V extends readonly [string, ...string[]]>(
  values: V,
  options: SchemaOptions & { description: string },
): TUnion<LiteralTuple<V>> {
  // The cast only restores the literal types that Array.map loses.
  return Type.Union(values.map((v) => Type.Literal(v)) as LiteralTuple<V>, options) as unknown as TUnion<LiteralTuple<V>>;
}

export const DNS_LABEL_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
export const DNS_SUBDOMAIN_PATTERN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';

/** A DNS-1123 label (names of queues, cohorts, stages...). */
export function DnsLabel(description: string, maxLength = 63) {
  return Type.String({ description, minLength: 1, maxLength, pattern: DNS_LABEL_PATTERN });
}

/** A non-negative quantity: an integer or a Kubernetes quantity string ("32Gi", "500m"). */
export function Quantity(description: string) {
  return Type.Union([Type.Integer({ minimum: 0 }), Type.String({ pattern: NON_NEGATIVE_QUANTITY_PATTERN, maxLength: 64 })], {
    description,
    'x-kubernetes-int-or-string': true,
  });
}
export type Quantity = QuantityValue;

/**
 * Resource requests per replica, keyed by resource name. `nvidia.com/gpu` must be a whole number.
 * Bounded so that CEL rules over it stay within the apiserver's cost budget.
 */
export function ResourceList(description: string) {
  return withRules(
    Type.Record(Type.String(), Quantity('Amount of this resource: an integer or a quantity such as 32Gi or 500m.'), {
      description,
      maxProperties: 32,
    }),
    [
      {
        rule: `!('${GPU_RESOURCE}' in self) || quantity(string(self['${GPU_RESOURCE}'])).isInteger()`,
        message: `${GPU_RESOURCE} must be a whole number of GPUs`,
        fieldPath: `['${GPU_RESOURCE}']`,
        check: (self) => {
          const gpus = self[GPU_RESOURCE];
          return gpus === undefined || isWholeQuantity(gpus);
        },
      },
    ],
  );
}
export type ResourceList = Record<string, Quantity>;

/** Reads the per-replica GPU count from a resource list (0 when absent or unparsable). */
export function gpusIn(resources: ResourceList | undefined): number {
  const v = resources?.[GPU_RESOURCE];
  if (v === undefined) return 0;
  const n = typeof v === 'number' ? v : Number(v);
  return Number.isFinite(n) ? n : 0;
}

// ---------------------------------------------------------------------------------------------
// Status conditions (the shape of metav1.Condition)
// ---------------------------------------------------------------------------------------------

export const Condition = Obj(
  {
    type: Type.String({
      description: 'Type of the condition in CamelCase, e.g. Ready, Admitted, Scheduled.',
      maxLength: 316,
      pattern: '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$',
    }),
    status: StringEnum(['True', 'False', 'Unknown'], { description: 'Status of the condition: True, False or Unknown.' }),
    observedGeneration: Type.Optional(Type.Integer({ description: 'metadata.generation the condition was computed from.', minimum: 0, format: 'int64' })),
    lastTransitionTime: Type.String({ description: 'Last time the status changed (RFC 3339).', format: 'date-time' }),
    reason: Type.String({
      description: 'Machine-readable CamelCase reason for the last transition.',
      minLength: 1,
      maxLength: 1024,
      pattern: '^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$',
    }),
    message: Type.String({ description: "Human-readable details, e.g. the scheduler's explanation.", maxLength: 32768 }),
  },
  { description: 'A status condition in the shape of metav1.Condition.' },
);
export type Condition = Static<typeof Condition>;

export const Conditions = Type.Array(Condition, {
  description: "Latest observations of the object's state, one per condition type.",
  maxItems: 32,
  'x-kubernetes-list-type': 'map',
  'x-kubernetes-list-map-keys': ['type'],
});

// ---------------------------------------------------------------------------------------------
// Containers and pod templates
// ---------------------------------------------------------------------------------------------

export const EnvVar = withRules(
  Obj(
    {
      name: Type.String({ description: 'Environment variable name.', minLength: 1, maxLength: 256, pattern: '^[^=]+$' }),
      value: Type.Optional(Type.String({ description: 'Literal value; overrides any value SITS would inject.', maxLength: 32768 })),
      valueFrom: Type.Optional(
        Type.Record(Type.String(), Type.Unknown(), {
          description: 'Source for the value, as in a core/v1 EnvVar (secretKeyRef, configMapKeyRef, fieldRef...).',
          'x-kubernetes-preserve-unknown-fields': true,
        }),
      ),
    },
    { description: 'An environment variable for the workload container.' },
  ),
  [
    {
      rule: '!(has(self.value) && has(self.valueFrom))',
      message: 'set value or valueFrom, not both',
      fieldPath: '.valueFrom',
      check: (self) => !(self.value !== undefined && self.valueFrom !== undefined),
    },
  ],
);
export type EnvVar = Static<typeof EnvVar>;

export function EnvList(description: string) {
  return Type.Array(EnvVar, {
    description,
    maxItems: 128,
    'x-kubernetes-list-type': 'map',
    'x-kubernetes-list-map-keys': ['name'],
  });
}

function StringList(description: string, itemDescription: string, maxItems: number, maxLength: number) {
  return Type.Array(Type.String({ description: itemDescription, maxLength }), { description, maxItems });
}

const containerFields = {
  command: Type.Optional(
    StringList('Entrypoint; replaces the image ENTRYPOINT (e.g. ["torchrun", "--nproc_per_node=1", "train.py"]).', 'One argv element.', 256, 4096),
  ),
  args: Type.Optional(StringList('Arguments to the entrypoint; replace the image CMD.', 'One argv element.', 256, 4096)),
  workingDir: Type.Optional(Type.String({ description: 'Working directory of the container.', maxLength: 4096 })),
  env: Type.Optional(EnvList('Environment variables; an entry with the same name as an injected variable (RANK, NCCL_*, ...) overrides it.')),
  imagePullPolicy: Type.Optional(
    StringEnum(['Always', 'IfNotPresent', 'Never'], { description: 'Image pull policy; unset means the Kubernetes default for the tag.' }),
  ),
};

/** The workload container; image is required. */
export const Container = Obj(
  {
    image: Type.String({ description: 'Container image reference.', minLength: 1, maxLength: 1024 }),
    ...containerFields,
  },
  { description: 'The workload container (a subset of core/v1 Container); use podTemplate for anything else.' },
);
export type Container = Static<typeof Container>;

/** The serving container; the image defaults to the runtime's image. */
export const ContainerOverrides = Obj(
  {
    image: Type.Optional(
      Type.String({ description: "Container image; unset means the runtime's default image chosen by the controller.", minLength: 1, maxLength: 1024 }),
    ),
    ...containerFields,
  },
  { description: 'Overrides for the runtime container (a subset of core/v1 Container).' },
);
export type ContainerOverrides = Static<typeof ContainerOverrides>;

export const PodTemplate = Obj(
  {
    metadata: Type.Optional(
      Obj(
        {
          labels: Type.Optional(
            Type.Record(Type.String(), Type.String({ maxLength: 63, description: 'Label value.' }), {
              description: 'Labels added to every pod.',
              maxProperties: 64,
            }),
          ),
          annotations: Type.Optional(
            Type.Record(Type.String(), Type.String({ maxLength: 65536, description: 'Annotation value.' }), {
              description: 'Annotations added to every pod.',
              maxProperties: 64,
            }),
          ),
        },
        { description: 'Labels and annotations for the pods.' },
      ),
    ),
    spec: Type.Record(Type.String(), Type.Unknown(), {
      description:
        'A core/v1 PodSpec, passed through unvalidated here and checked by the apiserver when pods are created. SITS sets schedulerName, and merges its environment into the container named "trainer" (or the first).',
      'x-kubernetes-preserve-unknown-fields': true,
    }),
  },
  { description: 'Escape hatch: a full pod template for what the typed fields do not cover.' },
);
export type PodTemplate = Static<typeof PodTemplate>;

// ---------------------------------------------------------------------------------------------
// GPUs, topology, scheduling
// ---------------------------------------------------------------------------------------------

export const TOPOLOGY_LEVELS = ['nvlink-domain', 'node', 'rack', 'block', 'zone'] as const;
export type TopologyLevel = (typeof TOPOLOGY_LEVELS)[number];

export function TopologyLevelEnum(description: string) {
  return StringEnum(TOPOLOGY_LEVELS, { description });
}

/** Index of a topology level, narrowest first. */
export function topologyRank(level: TopologyLevel): number {
  return TOPOLOGY_LEVELS.indexOf(level);
}

/**
 * CEL for "level `narrow` is the same as or narrower than level `wide`", spelled out as equalities:
 * the apiserver's cost estimator prices indexOf() on a list literal as if it were unbounded.
 */
export function celLevelAtMost(narrow: string, wide: string): string {
  return TOPOLOGY_LEVELS.map((w, i) => {
    const allowed = TOPOLOGY_LEVELS.slice(0, i + 1)
      .map((n) => `${narrow} == '${n}'`)
      .join(' || ');
    return `(${wide} == '${w}' && (${allowed}))`;
  }).join(' || ');
}

export const GpuRequirements = Obj(
  {
    allowedModels: Type.Optional(
      Type.Array(Type.String({ description: 'GPU product name as in the node label, e.g. NVIDIA-A800-SXM4-80GB.', minLength: 1, maxLength: 128 }), {
        description: 'GPU models the workload may run on; empty or unset means any model.',
        maxItems: 16,
        'x-kubernetes-list-type': 'set',
      }),
    ),
    minComputeCapability: Type.Optional(
      Type.String({ description: 'Minimum CUDA compute capability, e.g. "8.0" (A100/A800) or "9.0" (H100).', maxLength: 8, pattern: '^[0-9]{1,2}\\.[0-9]$' }),
    ),
    minMemoryGiB: Type.Optional(Type.Integer({ description: 'Minimum memory per GPU in GiB.', minimum: 1, maximum: 4096 })),
  },
  { description: 'Which GPUs are acceptable; the scheduler filters nodes by their GPU labels.' },
);
export type GpuRequirements = Static<typeof GpuRequirements>;

export function QueueName() {
  return DnsLabel("Name of the Queue that admits this workload; unset means the cluster's default queue.");
}

export function PriorityClassName() {
  return Type.String({
    description: 'PriorityClass of the pods; orders workloads inside a queue and decides preemption.',
    minLength: 1,
    maxLength: 253,
    pattern: DNS_SUBDOMAIN_PATTERN,
  });
}

export const DATA_FORMATS = ['jsonl', 'parquet', 'csv', 'arrow', 'webdataset', 'tfrecord'] as const;

export function DataRef(description: string) {
  return Obj(
    {
      uri: Type.String({
        description:
          'Location of the data, e.g. s3://bucket/prefix/ or pvc://claim/path. The path stays inside its bucket or claim: no . or .. segment, backslash or control character; a pvc:// path is relative, without % or empty segments.',
        minLength: 1,
        maxLength: 2048,
        pattern: DATA_URI_PATTERN,
      }),
      format: Type.Optional(StringEnum(DATA_FORMATS, { description: 'Record format. Default: jsonl.', default: 'jsonl' })),
    },
    { description },
  );
}

// ---------------------------------------------------------------------------------------------
// Resource envelope
// ---------------------------------------------------------------------------------------------

/** What SITS reads from metadata; the apiserver owns the rest of ObjectMeta. */
export const ObjectMeta = Type.Object(
  {
    name: Type.Optional(Type.String({ description: 'Name of the object.', maxLength: 253 })),
    generateName: Type.Optional(Type.String({ description: 'Prefix for a generated name.', maxLength: 253 })),
    namespace: Type.Optional(Type.String({ description: 'Namespace of the object.', maxLength: 63 })),
    uid: Type.Optional(Type.String({ description: 'Unique id set by the apiserver.' })),
    resourceVersion: Type.Optional(Type.String({ description: 'Opaque version for optimistic concurrency.' })),
    generation: Type.Optional(Type.Integer({ description: 'Generation of the desired state.' })),
    creationTimestamp: Type.Optional(Type.String({ description: 'When the object was created.' })),
    labels: Type.Optional(Type.Record(Type.String(), Type.String(), { description: 'Labels.' })),
    annotations: Type.Optional(Type.Record(Type.String(), Type.String(), { description: 'Annotations.' })),
  },
  { description: 'Standard object metadata.', additionalProperties: true },
);
export type ObjectMeta = Static<typeof ObjectMeta>;

/** The full object of one kind: apiVersion, kind, metadata, spec and optional status. */
export function Resource<const K extends string, S extends TSchema, St extends TSchema>(kind: K, spec: S, status: St, description: string) {
  return Type.Object(
    {
      apiVersion: Type.Literal(API_GROUP_VERSION, { description: 'APIVersion of this object: ai.sits2026.dev/v1.' }),
      kind: Type.Literal(kind, { description: `Kind of this object: ${kind}.` }),
      metadata: ObjectMeta,
      spec,
      status: Type.Optional(status),
    },
    { description, additionalProperties: false },
  );
}

/** A CEL rule on the resource root limiting metadata.name, for names reused as pod hostnames and Services. */
export function nameLengthRule<T extends { metadata: ObjectMeta }>(max: number, why: string): CelRule<T> {
  return {
    rule: `self.metadata.name.size() <= ${max}`,
    message: `metadata.name must be at most ${max} characters: ${why}`,
    // The apiserver cannot point below metadata (its schema is opaque), so it names metadata.
    fieldPath: '.metadata',
    check: (self) => (self.metadata.name ?? '').length <= max,
  };
}

/** The name becomes a DNS label (a Service, pod hostnames): no dots, lower case, alphanumeric ends. */
export function dnsLabelNameRule<T extends { metadata: ObjectMeta }>(why: string): CelRule<T> {
  return {
    rule: "self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",
    message: `metadata.name must be a DNS label (lower-case letters, digits and '-', no dots): ${why}`,
    fieldPath: '.metadata',
    check: (self) => /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(self.metadata.name ?? ''),
  };
}

/** A non-negative count in a status (int32, or int64 where counts can exceed 2³¹). */
export const Count = (description: string, format: 'int32' | 'int64' = 'int32') => Type.Integer({ description, minimum: 0, format });
/** An RFC 3339 time in a status. */
export const Timestamp = (description: string) => Type.String({ description, format: 'date-time' });
/** status.observedGeneration, the same in every kind. */
export const ObservedGeneration = () => Type.Optional(Type.Integer({ description: 'metadata.generation this status reflects.', minimum: 0, format: 'int64' }));

export type { QuantityValue };
