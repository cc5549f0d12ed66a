// Issue 36, deliverable 3 (a): hostile URIs and paths in every CRD field that carries one, through the CRD
// validation `sits lint` runs (in-process, thousands of cases) and through the real `sits lint` on files (a sample,
// one run): never a crash, an error naming the field exactly when the field's parser refuses the value.
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { validateResource } from '../api/validate.ts';
import { PATH_FIELDS, accepts, edgeValues, hostileValue } from '../api/hostile-paths.ts';
import { runSits } from '../testing/sits-cli.ts';

/** A value for a message: long ones cut (the test names their length). */
const show = (v: string): string => (v.length <= 80 ? JSON.stringify(v) : `${JSON.stringify(v.slice(0, 60))}… (${v.length} characters)`);

describe('hostile URIs and paths in every URI or path field (issue 36)', () => {
  it('the CRD validation refuses, naming the field, exactly what the field parser refuses', () => {
    for (const f of PATH_FIELDS) {
      for (const v of edgeValues(f)) {
        const r = validateResource(f.kind, f.manifest(v, 'edge'));
        expect(r.ok, `${f.field} = ${show(v)}: ${JSON.stringify(r.ok ? 'accepted' : r.errors).slice(0, 300)}`).toBe(accepts(f, v));
      }
      expect(
        validateResource(f.kind, f.manifest(f.shape === 'uri' ? 'pvc://data/in/x' : f.shape === 'mount-path' ? '/model' : 'adapters/run-1', 'ok')),
        `${f.kind} ${f.field}: the base object`,
      ).toMatchObject({ ok: true });
      fc.assert(
        fc.property(hostileValue(f), (v) => {
          const r = validateResource(f.kind, f.manifest(v, 'fuzz'));
          const what = `${f.kind} ${f.field} = ${show(v)}`;
          if (accepts(f, v)) expect(r.ok ? [] : r.errors, `${what}: the parser accepts it`).toEqual([]);
          else expect(r.ok ? [] : r.errors.filter((e) => e.path === f.field), `${what}: the parser refuses it`).not.toEqual([]);
        }),
        { numRuns: 400, seed: 36 },
      );
    }
  });

  it('sits lint on files: exit 0 only for accepted values, otherwise a crd-schema error naming the field; never a crash', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sits-lint-paths-'));
    mkdirSync(join(dir, 'accepted'));
    mkdirSync(join(dir, 'all'));
    const cases: { file: string; field: string; value: string; want: boolean }[] = [];
    PATH_FIELDS.forEach((f, i) => {
      [...edgeValues(f), ...fc.sample(hostileValue(f), { numRuns: 16, seed: 3600 + i })].forEach((v, j) => {
        const file = join(dir, 'all', `f${i}-${j}.yaml`);
        const text = stringify(f.manifest(v, `fuzz-${i}-${j}`));
        writeFileSync(file, text);
        const want = accepts(f, v);
        if (want) writeFileSync(join(dir, 'accepted', `f${i}-${j}.yaml`), text);
        cases.push({ file, field: f.field, value: v, want });
      });
    });
    expect(cases.filter((c) => c.want).length).toBeGreaterThan(10);
    expect(cases.filter((c) => !c.want).length).toBeGreaterThan(cases.length / 3);
    const all = await runSits(['lint', join(dir, 'all'), '-o', 'json']);
    expect(all.err).toBe('');
    expect(all.code).toBe(1);
    const findings = JSON.parse(all.out) as { file: string; rule: string; severity: string; field: string; message: string }[];
    for (const c of cases) {
      const errors = findings.filter((x) => x.file === c.file && x.severity === 'error');
      if (c.want) expect(errors, `${c.field} = ${show(c.value)}`).toEqual([]);
      else
        expect(
          errors.filter((e) => e.rule === 'crd-schema' && e.field === c.field).length,
          `${c.field} = ${show(c.value)}: ${JSON.stringify(errors).slice(0, 400)}`,
        ).toBeGreaterThan(0);
    }
    const accepted = await runSits(['lint', join(dir, 'accepted')]);
    expect(accepted, accepted.out).toMatchObject({ code: 0, err: '' });
  }, 120_000);
});
