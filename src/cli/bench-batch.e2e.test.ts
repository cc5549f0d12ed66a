// `sits bench batch --control-plane` end to end: the JSON's controlPlane measured on a real kube-apiserver + etcd
// (the batch dev cluster, ADR 0158), in the shape, with SITS's writes under 30 % of the per-record writer's.
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runBench as run } from './testing/bench-cli.ts';

describe('sits bench batch --control-plane', () => {
  it("fills controlPlane.writesPerJob from the apiserver's metrics", async () => {
    const tmp = mkdtempSync(join(tmpdir(), 'sits-bench-batch-cp-'));
    const json = join(tmp, 'b.json');
    const details = join(tmp, 'd.json');
    const r = await run(['batch', '--records', '300', '--json', json, '--details', details, '--control-plane', '--control-plane-records', '600']);
    expect(r.error).toBeUndefined();
    expect(r.out).toMatch(
      /control plane \(one job of 600 records on 2 workers, .* kube-apiserver v1\.36\.\d+ \/metrics\): API writes per job sits \d+, per-record status writer 604: [\d.]+ % fewer \(goal ≥ 70 % yes\)/,
    );
    const j = JSON.parse(readFileSync(json, 'utf8')) as { controlPlane: { writesPerJob: { sits: number; naive: number } } };
    expect(Object.keys(j.controlPlane)).toEqual(['writesPerJob']);
    expect(Object.keys(j.controlPlane.writesPerJob)).toEqual(['sits', 'naive']);
    // 600 status writes of the naive controller + its 2 workers' pod creates and deletes (600 records, so that SITS's
    // writes, which grow with shards and with time, stay well under 30 % on a slow machine too).
    expect(j.controlPlane.writesPerJob.naive).toBe(604);
    expect(j.controlPlane.writesPerJob.sits).toBeGreaterThan(4);
    expect(j.controlPlane.writesPerJob.sits).toBeLessThanOrEqual(0.3 * j.controlPlane.writesPerJob.naive);
    const d = JSON.parse(readFileSync(details, 'utf8')) as {
      controlPlane: { jobPhase: string; naiveStatusWrites: number; etcdJobWritesPerJob: { sits: number; naive: number } };
    };
    expect(d.controlPlane.jobPhase).toBe('Succeeded');
    expect(d.controlPlane.naiveStatusWrites).toBe(600);
    expect(d.controlPlane.etcdJobWritesPerJob.naive).toBeGreaterThanOrEqual(600);
    expect(d.controlPlane.etcdJobWritesPerJob.sits).toBeGreaterThan(0);
  }, 600_000);
});
