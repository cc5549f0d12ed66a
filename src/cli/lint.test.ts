import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Rule } from '../guard/rule.ts';
import { RULES } from '../guard/rules/index.ts';
import { runSits } from '../testing/sits-cli.ts';
import { lintOptions, type LintFlags } from './commands/lint.ts';
import { CliError } from './errors.ts';

const tmp = mkdtempSync(join(tmpdir(), 'sits-lint-cli-'));
const POD = 'apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: x}]}\n';
const flags = (f: Partial<LintFlags> = {}): LintFlags => ({ output: 'text', disable: [], schedulerName: [], ...f });
const rule = (id: string): Rule => ({ id, severity: 'warning', seed: 'test', title: id, rationale: '', kinds: ['Pod'], fixtures: { bad: '', good: '' }, check: () => [] });

describe('lintOptions', () => {
  const rules = [rule('b-rule'), rule('a-rule')];

  it('turns flags into cluster facts and disabled rules (comma lists, repeatable)', () => {
    const r = lintOptions(flags({ disable: ['a-rule, b-rule', 'a-rule'], gpuModels: 'A100,L4', rdma: true, schedulerName: ['sits-scheduler', 'other'] }), rules);
    expect(r.format).toBe('text');
    expect([...(r.options.disabled ?? [])]).toEqual(['a-rule', 'b-rule']);
    expect(r.options.cluster).toEqual({ schedulerNames: ['sits-scheduler', 'other'], gpuModels: ['A100', 'L4'], rdma: true });
    expect(lintOptions(flags(), rules).options.cluster).toEqual({ schedulerNames: ['sits-scheduler'] });
  });

  it('rejects an unknown rule id listing the valid ones, a bad format, an empty model list and a relative docs URL', () => {
    expect(() => lintOptions(flags({ disable: ['a-rule,nope'] }), rules)).toThrow(new CliError('--disable: unknown rule "nope"; valid rule ids: a-rule, b-rule'));
    expect(() => lintOptions(flags({ output: 'xml' }), rules)).toThrow('--output must be text, json, sarif, got "xml"');
    expect(() => lintOptions(flags({ gpuModels: ' , ' }), rules)).toThrow('--gpu-models needs at least one GPU model');
    expect(() => lintOptions(flags({ docsUrl: 'docs/' }), rules)).toThrow('--docs-url must be an absolute URL');
  });

  it('accepts every registered rule id', () => {
    expect(lintOptions(flags({ disable: RULES.map((r) => r.id) }), RULES).options.disabled?.size).toBe(RULES.length);
  });
});

describe('sits lint', () => {
  const dir = join(tmp, 'manifests');
  mkdirSync(join(dir, 'sub'), { recursive: true });
  writeFileSync(join(dir, 'ok.yaml'), POD);
  writeFileSync(join(dir, 'sub', 'bad.yaml'), `${POD}---\nkind: Pod\n---\nb: [\n`);

  it('prints file:line:column findings with a summary and exits 1 on errors; 0 when clean', async () => {
    const r = await runSits(['lint', dir]);
    expect(r.code).toBe(1);
    expect(r.out).toBe([`${dir}/sub/bad.yaml:6:1: error invalid-object the document has no apiVersion`, `${dir}/sub/bad.yaml:9:1: error yaml-syntax Flow sequence in block collection must be sufficiently indented and end with a ]`, '2 errors, 0 warnings in 2 objects from 2 inputs', ''].join('\n'));
    const clean = await runSits(['lint', join(dir, 'ok.yaml')]);
    expect(clean).toMatchObject({ code: 0, err: '' });
  });

  it('reads stdin for - and writes JSON and SARIF', async () => {
    const j = await runSits(['lint', '-', '-o', 'json'], { input: 'apiVersion: v1\nkind: Pod\n---\n- 1\n' });
    expect(j.code).toBe(1);
    expect(JSON.parse(j.out)).toEqual([{ file: '<stdin>', line: 4, column: 1, rule: 'invalid-object', severity: 'error', message: 'the document is a sequence, not a Kubernetes object (a mapping with apiVersion and kind)', field: '', kind: null, name: null, namespace: null }]);
    const s = await runSits(['lint', join(dir, 'sub'), '--output', 'sarif', '--docs-url', 'https://example.org/sits/']);
    expect(s.code).toBe(1);
    const log = JSON.parse(s.out);
    expect(log.version).toBe('2.1.0');
    expect(log.runs[0].results.map((x: { ruleId: string }) => x.ruleId)).toEqual(['invalid-object', 'yaml-syntax']);
    expect(log.runs[0].tool.driver.rules.find((x: { id: string }) => x.id === 'yaml-syntax').helpUri).toBe('https://example.org/sits/docs/rules.md#yaml-syntax');
  });

  it('stops reading stdin past the size limit: one input-too-large finding, exit 1', async () => {
    const r = await runSits(['lint', '-', '-o', 'json'], { input: `a: "${'x'.repeat(17 * 1024 * 1024)}"\n` });
    expect(r.code).toBe(1);
    const [f] = JSON.parse(r.out);
    expect(f).toMatchObject({ file: '<stdin>', line: 1, column: 1, rule: 'input-too-large' });
    expect(f.message).toContain('more than the limit of 16777216 (maxInputBytes)');
  });

  it('exits 2 on bad usage and on unreadable input, naming it (the rest is still linted)', async () => {
    const unknown = await runSits(['lint', dir, '--disable', 'no-such-rule']);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toContain('--disable: unknown rule "no-such-rule"; valid rule ids:');
    expect((await runSits(['lint'])).code).toBe(2);
    const help = await runSits(['lint', '--help']);
    expect(help.code).toBe(0);
    expect(help.out).toContain('Usage: sits lint [options] <paths...>');
    const missing = await runSits(['lint', join(tmp, 'nope.yaml'), join(dir, 'ok.yaml')]);
    expect(missing.code).toBe(2);
    expect(missing.err).toBe(`sits: ${join(tmp, 'nope.yaml')}: cannot read: ENOENT (check the path; the other inputs were linted)\n`);
    expect(missing.out).toBe('0 errors, 0 warnings in 1 object from 1 input\n');
  });
});
