// Issue 36, deliverable 3 (b): hostile URIs and paths in every CRD field that carries one, sent to a real
// kube-apiserver with the SITS CRDs installed (server-side dry runs: nothing is stored). The apiserver's verdict
// (the CRD pattern and length, in Go's RE2) must be the field parser's for every case: a value the parser refuses is
// a 422 naming the field, a value it accepts is created.
import { request } from 'node:https';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureK8sBinaries, startControlPlane, type ControlPlane } from '../harness/control-plane.ts';
import { PATH_FIELDS, accepts, edgeValues, hostileValue } from './hostile-paths.ts';
import { scaled } from '../testing/timeouts.ts';
import { buildCrds } from './crd.ts';
import { KINDS } from './kinds.ts';
import { API_GROUP, API_VERSION } from './wire.ts';

const NS = 'paths';
let plane: ControlPlane | undefined;

/** A POST of raw JSON (the CRDs are in wire form; a typed client would re-serialise them). */
function post(path: string, body: unknown): Promise<{ status: number; body: string }> {
  const cp = plane as ControlPlane;
  return new Promise((resolve, reject) => {
    const data = JSON.stringify(body);
    const req = request(
      `${cp.server}${path}`,
      {
        method: 'POST',
        rejectUnauthorized: false,
        headers: { Authorization: `Bearer ${cp.token}`, 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(data) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('error', reject);
    req.end(data);
  });
}

beforeAll(async () => {
  plane = await startControlPlane({ binDir: await ensureK8sBinaries() });
  for (const crd of buildCrds()) {
    const r = await post('/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd);
    if (r.status !== 201) throw new Error(`creating ${crd.metadata.name}: HTTP ${r.status}: ${r.body}`);
  }
  const ns = await post('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  if (ns.status !== 201) throw new Error(`creating namespace ${NS}: HTTP ${ns.status}: ${ns.body}`);
  // Established: a dry-run create of a valid object of every kind used here answers 201 (404 until then).
  for (const f of PATH_FIELDS) {
    const deadline = Date.now() + scaled(60_000);
    const path = `/apis/${API_GROUP}/${API_VERSION}/namespaces/${NS}/${KINDS[f.kind].plural}?dryRun=All`;
    const good = f.shape === 'uri' ? 'pvc://data/in/x' : f.shape === 'mount-path' ? '/model' : 'adapters/run-1';
    for (let r = await post(path, f.manifest(good, 'probe')); r.status !== 201; r = await post(path, f.manifest(good, 'probe'))) {
      if (r.status !== 404 || Date.now() > deadline) throw new Error(`${f.kind} ${f.field} = ${good}: HTTP ${r.status}: ${r.body}`);
      await new Promise((res) => setTimeout(res, 200));
    }
  }
}, scaled(240_000));

afterAll(async () => {
  await plane?.stop();
});

const show = (v: string): string => (v.length <= 80 ? JSON.stringify(v) : `${JSON.stringify(v.slice(0, 60))}… (${v.length} characters)`);

describe('hostile URIs and paths on a real kube-apiserver (issue 36)', () => {
  it('refuses, naming the field, exactly the values the field parser refuses', async () => {
    let refused = 0;
    let created = 0;
    for (const [i, f] of PATH_FIELDS.entries()) {
      // A bounded sample per field (seeded: the same cases every run), so that the whole check takes seconds.
      const values = [...edgeValues(f), ...fc.sample(hostileValue(f), { numRuns: 12, seed: 3636 + i })];
      const path = `/apis/${API_GROUP}/${API_VERSION}/namespaces/${NS}/${KINDS[f.kind].plural}?dryRun=All`;
      for (const [j, v] of values.entries()) {
        const what = `${f.kind} ${f.field} = ${show(v)}`;
        const r = await post(path, f.manifest(v, `fuzz-${i}-${j}`));
        if (accepts(f, v)) {
          expect(r.status, `${what}: the parser accepts it: ${r.body.slice(0, 600)}`).toBe(201);
          created++;
        } else {
          expect(r.status, `${what}: the parser refuses it`).toBe(422);
          expect((JSON.parse(r.body) as { message: string }).message, what).toContain(f.field);
          refused++;
        }
      }
    }
    // Both verdicts were exercised on the apiserver, not only one.
    expect(created).toBeGreaterThan(10);
    expect(refused).toBeGreaterThan(40);
  }, 120_000);
});
