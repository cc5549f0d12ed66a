import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import Ajv from 'ajv';
import type * as Sarif from 'sarif';
import { describe, expect, it } from 'vitest';
import { artifactUri, formatJson, formatSarif, formatText } from './format.ts';
import { INPUT_RULES, lintSources, type LocatedFinding, type RuleInfo } from './lint-files.ts';
import type { Rule } from './rule.ts';
import { RULES } from './rules/index.ts';

const require = createRequire(import.meta.url);

/** The official SARIF 2.1.0 schema (draft-04), as shipped in @microsoft/jest-sarif. */
function sarifValidator(): (log: unknown) => string[] {
  const ajv = new Ajv({ schemaId: 'auto', allErrors: true });
  ajv.addMetaSchema(JSON.parse(readFileSync(require.resolve('ajv/lib/refs/json-schema-draft-04.json'), 'utf8')) as object);
  const schema = JSON.parse(readFileSync(require.resolve('@microsoft/jest-sarif/lib/schemas/sarif-2.1.0-rtm.5.json'), 'utf8')) as object;
  const validate = ajv.compile(schema);
  return (log) => (validate(log) === true ? [] : (validate.errors ?? []).map((e) => `${e.dataPath} ${e.message ?? ''}`));
}

const rule: Rule = {
  id: 'gpu-requests-equal-limits',
  severity: 'error',
  seed: '000 §2.3',
  title: 'nvidia.com/gpu requests must equal limits',
  rationale: 'Extended resources cannot be overcommitted.',
  kinds: ['Pod'],
  fixtures: { bad: '', good: '' },
  check: (o) => (o.spec === undefined ? [] : [{ message: 'set requests equal to limits', path: ['spec', 'containers', 0, 'resources'] }]),
};
const warn: Rule = { ...rule, id: 'warn-always', severity: 'warning', title: 'always warns', check: () => [{ message: 'be careful', path: [] }] };

const TEXT = 'apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: ml}\nspec:\n  containers:\n    - resources: {limits: {nvidia.com/gpu: 1}}\n';
const report = lintSources(
  [
    { file: 'pods/p.yaml', text: TEXT, bytes: TEXT.length },
    { file: 'bad dir/x#1.yaml', text: 'a: [', bytes: 4 },
    { file: '<stdin>', text: `---\n# Source: c/templates/p.yaml\n${TEXT}`, bytes: 0 },
  ],
  [rule, warn],
);
const infos: RuleInfo[] = [rule, warn, ...INPUT_RULES];

describe('formatText', () => {
  it('one sorted line per finding (template named), then the summary', () => {
    expect(formatText(report.findings, report)).toBe(
      [
        '<stdin>:3:1: warning warn-always be careful (template c/templates/p.yaml)',
        '<stdin>:8:7: error gpu-requests-equal-limits set requests equal to limits (template c/templates/p.yaml)',
        'bad dir/x#1.yaml:1:5: error yaml-syntax Flow sequence in block collection must be sufficiently indented and end with a ]',
        'pods/p.yaml:1:1: warning warn-always be careful',
        'pods/p.yaml:6:7: error gpu-requests-equal-limits set requests equal to limits',
        '3 errors, 2 warnings in 2 objects from 3 inputs',
        '',
      ].join('\n'),
    );
    expect(formatText([], { files: 1, objects: 0 })).toBe('0 errors, 0 warnings in 0 objects from 1 input\n');
  });
});

describe('formatJson', () => {
  it('a stable array with the documented keys in order, nulls where the object has none', () => {
    const rows = JSON.parse(formatJson(report.findings)) as Record<string, unknown>[];
    expect(rows.map((r) => Object.keys(r))).toEqual([
      ['file', 'line', 'column', 'rule', 'severity', 'message', 'field', 'kind', 'name', 'namespace', 'template'],
      ['file', 'line', 'column', 'rule', 'severity', 'message', 'field', 'kind', 'name', 'namespace', 'template'],
      ['file', 'line', 'column', 'rule', 'severity', 'message', 'field', 'kind', 'name', 'namespace'],
      ['file', 'line', 'column', 'rule', 'severity', 'message', 'field', 'kind', 'name', 'namespace'],
      ['file', 'line', 'column', 'rule', 'severity', 'message', 'field', 'kind', 'name', 'namespace'],
    ]);
    expect(rows[4]).toEqual({
      file: 'pods/p.yaml',
      line: 6,
      column: 7,
      rule: 'gpu-requests-equal-limits',
      severity: 'error',
      message: 'set requests equal to limits',
      field: 'spec.containers[0].resources',
      kind: 'Pod',
      name: 'p',
      namespace: 'ml',
    });
    expect(rows[2]).toMatchObject({ kind: null, name: null, namespace: null, field: '' });
  });
});

describe('formatSarif', () => {
  const validate = sarifValidator();

  it('validates against the SARIF 2.1.0 schema, with and without a docs base', () => {
    for (const docsBase of [undefined, 'https://example.org/sits/blob/main/']) {
      const log = JSON.parse(formatSarif(report.findings, infos, { version: '0.1.0', ...(docsBase === undefined ? {} : { docsBase }) })) as Sarif.Log;
      expect(validate(log)).toEqual([]);
    }
    expect(validate(JSON.parse(formatSarif([], infos, { version: '0.1.0' })))).toEqual([]);
    // The validator is real: a broken log fails it.
    expect(validate({ version: '2.1.0', runs: [{ tool: { driver: {} }, results: [{ level: 'fatal' }] }] }).length).toBeGreaterThan(0);
  });

  it('lists the rules from their metadata and places each result in its artifact and region', () => {
    const log = JSON.parse(formatSarif(report.findings, infos, { version: '0.1.0', docsBase: 'https://example.org/sits/blob/main/' })) as Sarif.Log;
    const run = log.runs[0] as Sarif.Run;
    expect(run.tool.driver).toMatchObject({ name: 'sits-lint', version: '0.1.0' });
    expect(run.tool.driver.rules?.map((r) => r.id)).toEqual(infos.map((r) => r.id));
    expect(run.tool.driver.rules?.[0]).toMatchObject({
      id: 'gpu-requests-equal-limits',
      shortDescription: { text: 'nvidia.com/gpu requests must equal limits' },
      fullDescription: { text: 'Extended resources cannot be overcommitted.' },
      helpUri: 'https://example.org/sits/blob/main/docs/rules.md#gpu-requests-equal-limits',
      defaultConfiguration: { level: 'error' },
      properties: { seed: '000 §2.3' },
    });
    const results = run.results ?? [];
    expect(
      results.map((r) => [
        r.ruleId,
        r.ruleIndex,
        r.level,
        r.locations?.[0]?.physicalLocation?.artifactLocation?.uri,
        r.locations?.[0]?.physicalLocation?.region?.startLine,
        r.locations?.[0]?.physicalLocation?.region?.startColumn,
      ]),
    ).toEqual([
      ['warn-always', 1, 'warning', '%3Cstdin%3E', 3, 1],
      ['gpu-requests-equal-limits', 0, 'error', '%3Cstdin%3E', 8, 7],
      ['yaml-syntax', 2, 'error', 'bad%20dir/x%231.yaml', 1, 5],
      ['warn-always', 1, 'warning', 'pods/p.yaml', 1, 1],
      ['gpu-requests-equal-limits', 0, 'error', 'pods/p.yaml', 6, 7],
    ]);
    expect(results[4]?.locations?.[0]?.logicalLocations).toEqual([{ fullyQualifiedName: 'ml/Pod/p:spec.containers[0].resources', kind: 'object' }]);
    expect(results[1]?.properties).toEqual({ field: 'spec.containers[0].resources', template: 'c/templates/p.yaml' });
    // Without a base there is no (relative, hence invalid) helpUri; the help text names the doc.
    const plain = JSON.parse(formatSarif([], infos, { version: '0.1.0' })) as Sarif.Log;
    expect(plain.runs[0]?.tool.driver.rules?.[0]?.helpUri).toBeUndefined();
    expect(plain.runs[0]?.tool.driver.rules?.[0]?.help?.text).toContain('docs/rules.md#gpu-requests-equal-limits');
  });

  it('builds the rule list from the registered RULES too', () => {
    const all: RuleInfo[] = [...RULES, ...INPUT_RULES];
    const findings: LocatedFinding[] = all.map((r, i) => ({
      file: 'f.yaml',
      line: i + 1,
      column: 1,
      rule: r.id,
      severity: r.severity,
      message: 'm',
      field: '',
      kind: null,
      name: null,
      namespace: null,
    }));
    const log = JSON.parse(formatSarif(findings, all, { version: '0.1.0', docsBase: 'https://example.org/' })) as Sarif.Log;
    expect(validate(log)).toEqual([]);
    expect(log.runs[0]?.results?.map((r) => r.ruleIndex)).toEqual(all.map((_, i) => i));
  });

  it('writes absolute paths as file URIs', () => {
    expect(artifactUri('/tmp/a b/c.yaml')).toBe('file:///tmp/a%20b/c.yaml');
    expect(artifactUri('k8s/x.yaml')).toBe('k8s/x.yaml');
  });
});
