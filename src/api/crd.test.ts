import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { buildCrd, buildCrds, crdFiles, crdYaml, structuralSchemaOf } from './crd.ts';
import { KINDS, RESOURCE_KINDS } from './kinds.ts';
import { API_GROUP } from './wire.ts';
import { resolveFieldPath, structuralIssues } from './structural-check.ts';
import type { JSONSchemaProps } from './structural.ts';

const DEPLOY_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../../deploy/crds');

function schemaAt(root: JSONSchemaProps, jsonPath: string): JSONSchemaProps | undefined {
  return resolveFieldPath(root, jsonPath);
}

function walk(node: JSONSchemaProps, visit: (n: JSONSchemaProps) => void): void {
  visit(node);
  for (const p of Object.values(node.properties ?? {})) walk(p, visit);
  if (node.items) walk(node.items, visit);
  if (node.additionalProperties) walk(node.additionalProperties, visit);
}

describe('buildCrds', () => {
  const crds = buildCrds();

  it('yields one apiextensions.k8s.io/v1 CRD per kind in group ai.sits2026.dev, version v1', () => {
    expect(crds.map((c) => c.spec.names.kind)).toEqual(['TrainingJob', 'InferenceService', 'DataPipeline', 'BatchInferenceJob', 'Queue', 'PodGroup']);
    for (const crd of crds) {
      expect(crd.apiVersion).toBe('apiextensions.k8s.io/v1');
      expect(crd.metadata.name).toBe(`${crd.spec.names.plural}.${API_GROUP}`);
      expect(crd.spec.group).toBe(API_GROUP);
      expect(crd.spec.versions.map((v) => [v.name, v.served, v.storage])).toEqual([['v1', true, true]]);
      expect(crd.spec.names.categories).toEqual(['sits']);
      expect(crd.spec.names.shortNames.length).toBeGreaterThan(0);
      expect(crd.spec.versions[0]?.subresources.status).toEqual({});
    }
    expect(crds.find((c) => c.spec.names.kind === 'Queue')?.spec.scope).toBe('Cluster');
  });

  it('emits structural schemas with every field typed, described, bounded and no forbidden keywords', () => {
    for (const crd of crds) {
      const schema = crd.spec.versions[0]?.schema.openAPIV3Schema;
      expect(schema).toBeDefined();
      if (schema) expect(structuralIssues(schema), crd.metadata.name).toEqual([]);
    }
  });

  it('serialises nothing TypeBox-specific (no symbols, $id, const, patternProperties or additionalProperties: false)', () => {
    const text = JSON.stringify(crds);
    for (const bad of ['"$id"', '"const"', '"patternProperties"', '"additionalProperties":false', '"check"', '"uniqueItems"']) expect(text).not.toContain(bad);
    expect(JSON.parse(text)).toEqual(crds);
  });

  it('documents every default in the field description', () => {
    let defaults = 0;
    for (const crd of crds) {
      const root = crd.spec.versions[0]?.schema.openAPIV3Schema;
      if (!root) continue;
      walk(root, (n) => {
        if (n.default === undefined) return;
        defaults++;
        const shown = typeof n.default === 'string' ? n.default : JSON.stringify(n.default);
        expect(n.description).toContain(`Default: ${shown}`);
      });
    }
    expect(defaults).toBeGreaterThan(30);
  });

  it('has the bounds and enums the seeds ask for', () => {
    const tj = structuralSchemaOf('TrainingJob').root;
    expect(schemaAt(tj, '.spec.replicas')).toMatchObject({ type: 'integer', minimum: 1 });
    expect(schemaAt(tj, '.spec.gpusPerReplica')).toMatchObject({ type: 'integer', minimum: 0 });
    expect(schemaAt(tj, '.spec.topology.strategy')?.enum).toContain('ring-allreduce');
    expect(schemaAt(tj, '.spec.restartPolicy')?.enum).toEqual(['OnFailure', 'ExitCode', 'Never']);
    expect(schemaAt(tj, '.spec.topology.requiredLevel')?.enum).toEqual(['nvlink-domain', 'node', 'rack', 'block', 'zone']);
    const gpuQty = schemaAt(tj, ".spec.resources['nvidia.com/gpu']");
    expect(gpuQty).toMatchObject({ 'x-kubernetes-int-or-string': true, minimum: 0 });
    expect(gpuQty?.pattern).toBeDefined();

    const bij = structuralSchemaOf('BatchInferenceJob').root;
    expect(schemaAt(bij, '.spec.batching.batchSize')).toMatchObject({ minimum: 1, maximum: 2048 });
    expect(schemaAt(bij, '.spec.batching.seqLen')).toMatchObject({ minimum: 1, maximum: 32768 });
    expect(schemaAt(bij, '.spec.batching.kvCachePolicy')?.enum).toEqual(['recycle', 'retain', 'evict']);

    const isvc = structuralSchemaOf('InferenceService').root;
    expect(schemaAt(isvc, '.spec.runtime')?.enum).toEqual(['vllm', 'tgi', 'triton', 'llamacpp']);

    const q = structuralSchemaOf('Queue').root;
    expect(schemaAt(q, '.spec.tier')?.enum).toEqual(['gold', 'silver', 'bronze']);
    expect(schemaAt(q, '.spec.resources')).toMatchObject({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'] });
  });

  it('types conditions like metav1.Condition, as a list map keyed by type', () => {
    for (const kind of RESOURCE_KINDS) {
      const conditions = schemaAt(structuralSchemaOf(kind).root, '.status.conditions');
      expect(conditions, kind).toMatchObject({ type: 'array', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] });
      expect(conditions?.items?.required).toEqual(['type', 'status', 'lastTransitionTime', 'reason', 'message']);
      expect(conditions?.items?.properties?.status?.enum).toEqual(['True', 'False', 'Unknown']);
    }
  });

  it('points printer columns and scale paths at fields of the right type', () => {
    const columnType = { integer: 'integer', number: 'number', string: 'string', boolean: 'boolean', date: 'string' } as const;
    for (const kind of RESOURCE_KINDS) {
      const def = KINDS[kind];
      const root = structuralSchemaOf(kind).root;
      for (const col of def.printerColumns) {
        if (col.jsonPath === '.metadata.creationTimestamp') continue;
        const node = schemaAt(root, col.jsonPath);
        expect(node, `${kind} column ${col.name}`).toBeDefined();
        expect(node?.type, `${kind} column ${col.name}`).toBe(columnType[col.type]);
      }
      const scale = 'scale' in def ? def.scale : undefined;
      if (scale) {
        expect(schemaAt(root, scale.specReplicasPath)?.type).toBe('integer');
        expect(schemaAt(root, scale.statusReplicasPath)?.type).toBe('integer');
        if (scale.labelSelectorPath) expect(schemaAt(root, scale.labelSelectorPath)?.type).toBe('string');
      }
    }
    const tjColumns = KINDS.TrainingJob.printerColumns.map((c) => c.name);
    expect(tjColumns).toEqual(expect.arrayContaining(['Phase', 'Ready', 'Replicas', 'GPUs', 'Age']));
    expect(buildCrd('TrainingJob').spec.versions[0]?.subresources.scale).toEqual({
      specReplicasPath: '.spec.replicas',
      statusReplicasPath: '.status.replicas',
      labelSelectorPath: '.status.selector',
    });
    expect(buildCrd('InferenceService').spec.versions[0]?.subresources.scale).toBeDefined();
  });

  it('has a TypeScript mirror for every CEL rule, each naming a field that exists', () => {
    let count = 0;
    for (const kind of RESOURCE_KINDS) {
      const { root, rules } = structuralSchemaOf(kind);
      walk(root, (n) => {
        const xv = n['x-kubernetes-validations'] ?? [];
        const mirrors = rules.get(n) ?? [];
        expect(mirrors.map((m) => m.rule)).toEqual(xv.map((v) => v.rule));
        for (const v of xv) {
          count++;
          expect(v.message.length).toBeGreaterThan(0);
          expect(v.fieldPath, `${kind}: ${v.rule} should name a field`).toBeDefined();
        }
      });
    }
    expect(count).toBeGreaterThan(20);
  });

  it('prints all CRDs as one multi-document YAML stream', () => {
    const docs = parseAllDocuments(crdYaml());
    expect(docs.map((d) => (d.toJS() as { metadata: { name: string } }).metadata.name)).toEqual(crds.map((c) => c.metadata.name));
    expect(docs.map((d) => d.toJS())).toEqual(crds);
  });
});

describe('deploy/crds', () => {
  it('holds exactly the generator output (run `npx tsx scripts/gen-crds.ts` after changing a schema)', () => {
    const files = crdFiles();
    expect(existsSync(DEPLOY_DIR)).toBe(true);
    const committed = readdirSync(DEPLOY_DIR)
      .filter((f) => f.endsWith('.yaml'))
      .sort();
    expect(committed).toEqual(files.map((f) => f.fileName).sort());
    for (const f of files) expect(readFileSync(join(DEPLOY_DIR, f.fileName), 'utf8'), f.fileName).toBe(f.content);
  });
});
