// Public surface of the SITS API: kinds, their TypeScript types, offline validation and the CRDs.
export * from './schema/common.ts';
export * from './schema/training-job.ts';
export * from './schema/inference-service.ts';
export * from './schema/data-pipeline.ts';
export * from './schema/batch-inference-job.ts';
export * from './schema/queue.ts';
export * from './schema/pod-group.ts';
export * from './quantity.ts';
export { KINDS, RESOURCE_KINDS, isResourceKind, kindDefinition } from './kinds.ts';
export type { KindDefinition, PrinterColumn, ResourceKind, ScaleSubresource } from './kinds.ts';
export { buildCrd, buildCrds, crdFiles, crdName, crdYaml, structuralSchemaOf, GENERATED_HEADER } from './crd.ts';
export type { CustomResourceDefinition } from './crd.ts';
export { resourceStructuralSchema, toStructural } from './structural.ts';
export type { JSONSchemaProps, JsonValue, OpenApiType, StructuralSchema } from './structural.ts';
export { ELASTIC_TRAINING_JOB, EXAMPLES, INVALID_CASES, SEED_TRAINING_JOB } from './examples.ts';
export type { InvalidCase } from './examples.ts';
export { formatErrors, validateManifest, validateResource, withDefaults } from './validate.ts';
export type { FieldError, FieldErrorCode, ResourceTypes, SitsResource, ValidationResult } from './validate.ts';
