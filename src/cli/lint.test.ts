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
const rule = (id: string): Rule => ({
  id,
  severity: 'warning',
  seed: 'test',
  title: id,
  rationale: '',
  kinds: ['Pod'],
  fixtures: { bad: '', good: '' },
  check: () => [],
});

describe('lintOptions', () => {
  const rules = [rule('b-rule'), rule('a-rule')];

  it('turns flags into cluster facts and disabled rules (comma lists, repeatable)', () => {
    const r = lintOptions(
      flags({ disable: ['a-rule, b-rule', 'a-rule'], gpuModels: 'A100,L4', rdma: true, schedulerName: ['sits-scheduler', 'other'] }),
      rules,
    );
    expect(r.format).toBe('text');
    expect([...(r.options.disabled ?? [])]).toEqual(['a-rule', 'b-rule']);
    expect(r.options.cluster).toEqual({ schedulerNames: ['sits-scheduler', 'other'], gpuModels: ['A100', 'L4'], rdma: true });
    expect(lintOptions(flags(), rules).options.cluster).toEqual({ schedulerNames: ['sits-scheduler'] });
  });

  it('rejects an unknown rule id listing the valid ones, a bad format, an empty model list and a relative docs URL', () => {
    expect(() => lintOptions(flags({ disable: ['a-rule,nope'] }), rules)).toThrow(
      new CliError('--disable: unknown rule "nope"; valid rule ids: a-rule, b-rule'),
    );
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

  it('prints file:line:column findings with a summary; exits 2 when an input has a syntax error, 0 when clean', async () => {
    const r = await runSits(['lint', dir]);
    expect(r.code).toBe(2);
    expect(r.out).toBe(
      [
        `${dir}/sub/bad.yaml:6:1: error invalid-object the document has no apiVersion`,
        `${dir}/sub/bad.yaml:9:1: error yaml-syntax Flow sequence in block collection must be sufficiently indented and end with a ]`,
        '2 errors, 0 warnings in 2 objects from 2 inputs',
        '',
      ].join('\n'),
    );
    const clean = await runSits(['lint', join(dir, 'ok.yaml')]);
    expect(clean).toMatchObject({ code: 0, err: '' });
  });

  it('reads stdin for - and writes JSON and SARIF', async () => {
    const j = await runSits(['lint', '-', '-o', 'json'], { input: 'apiVersion: v1\nkind: Pod\n---\n- 1\n' });
    expect(j.code).toBe(1);
    expect(JSON.parse(j.out)).toEqual([
      {
        file: '<stdin>',
        line: 4,
        column: 1,
        rule: 'invalid-object',
        severity: 'error',
        message: 'the document is a sequence, not a Kubernetes object (a mapping with apiVersion and kind)',
        field: '',
        kind: null,
        name: null,
        namespace: null,
      },
    ]);
    const s = await runSits(['lint', join(dir, 'sub'), '--output', 'sarif', '--docs-url', 'https://example.org/sits/']);
    expect(s.code).toBe(2);
    const log = JSON.parse(s.out);
    expect(log.version).toBe('2.1.0');
    expect(log.runs[0].results.map((x: { ruleId: string }) => x.ruleId)).toEqual(['invalid-object', 'yaml-syntax']);
    expect(log.runs[0].tool.driver.rules.find((x: { id: string }) => x.id === 'yaml-syntax').helpUri).toBe(
      'https://example.org/sits/docs/rules.md#yaml-syntax',
    );
  });

  it('stops reading stdin past the size limit: one input-too-large finding, exit 2 (the input is not read)', async () => {
    const r = await runSits(['lint', '-', '-o', 'json'], { input: `a: "${'x'.repeat(17 * 1024 * 1024)}"\n` });
    expect(r.code).toBe(2);
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

  it('checks SITS kinds against their CRD schema and pod specs as the apiserver would (issue 31)', async () => {
    const input = [
      'apiVersion: ai.sits2026.dev/v1\nkind: TrainingJob\nmetadata: {name: llama}\nspec:\n  replicas: -8\n  resources: {nvidia.com/gpu: "lots"}\n  container: {image: x}',
      'apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: x, resources: {limits: {nvidia.com/gpu: -2}}}]',
      'apiVersion: v1\nkind: Pod\nmetadata: {name: q}\nspec:\n  containers: "notalist"',
    ].join('\n---\n');
    const r = await runSits(['lint', '-'], { input: `${input}\n` });
    expect(r.code).toBe(1);
    expect(
      r.out
        .split('\n')
        .filter((l) => l.includes(' error '))
        .map((l) => l.replace(/: (Invalid value|-2 is|must be).*/, ': $1')),
    ).toEqual([
      '<stdin>:5:3: error crd-schema spec.replicas: Invalid value',
      '<stdin>:6:15: error crd-schema spec.resources[nvidia.com/gpu]: Invalid value',
      '<stdin>:6:15: error crd-schema spec.resources[nvidia.com/gpu]: nvidia.com/gpu must be a whole number of GPUs',
      '<stdin>:13:57: error invalid-pod-template spec.containers[0].resources.limits[nvidia.com/gpu]: -2 is',
      '<stdin>:19:3: error invalid-pod-template spec.containers: must be',
    ]);
  });

  it('warns on a training pod without /dev/shm (exit 0: a warning)', async () => {
    const r = await runSits(['lint', '-'], {
      input: 'apiVersion: v1\nkind: Pod\nmetadata: {name: t}\nspec:\n  containers: [{name: t, image: x, command: [torchrun, train.py]}]\n',
    });
    expect(r).toMatchObject({ code: 0, err: '' });
    expect(r.out).toContain('<stdin>:5:16: warning training-without-shm container t runs torchrun but mounts nothing at /dev/shm');
    expect(r.out).toContain('volumeMounts: [{name: dshm, mountPath: /dev/shm}]');
  });

  it('refuses an unrendered Helm chart once with the helm template command, and binary input without echoing it (exit 2)', async () => {
    const chart = await runSits(['lint', 'deploy/helm/sits']);
    expect(chart).toEqual({
      code: 2,
      out: '0 errors, 0 warnings in 0 objects from 0 inputs\n',
      err: 'sits: deploy/helm/sits: this is a Helm chart: lint its rendered output: helm template NAME deploy/helm/sits | sits lint -\n',
    });
    const bin = join(tmp, 'weights.bin');
    writeFileSync(bin, Buffer.concat([Buffer.from('PK\u0003\u0004'), Buffer.alloc(2_000_000, 0x41), Buffer.from([0xff, 0x00])]));
    const b = await runSits(['lint', bin, join(dir, 'ok.yaml')]);
    expect(b).toEqual({
      code: 2,
      out: '0 errors, 0 warnings in 1 object from 1 input\n',
      err: `sits: ${bin}: is a binary file, not YAML or JSON: nothing was read from it (give sits lint manifests; the other inputs were linted)\n`,
    });
  });

  it('exits 2 on a YAML syntax error, at its file:line:column, quoting at most a line of it', async () => {
    const r = await runSits(['lint', '-'], { input: `apiVersion: v1\nkind: Pod\nmetadata: {name: "${'x'.repeat(100_000)}\n` });
    expect(r.code).toBe(2);
    expect(r.out.length).toBeLessThan(1_000);
    expect(r.out).toMatch(/^<stdin>:\d+:\d+: error yaml-syntax /);
  });
});
