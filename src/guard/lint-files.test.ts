import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { KubeObject, Rule, RuleHit } from './rule.ts';
import { RULES } from './rules/index.ts';
import { decodeText, exitCodeOf, isHelmTemplate, LIMITS, lintSources, loadSource, readInputs, type InputSource, type LocatedFinding } from './lint-files.ts';
import { cpuMsSince } from '../testing/timeouts.ts';

const src = (file: string, text: string): InputSource => ({ file, text, bytes: Buffer.byteLength(text) });

type Obj = Record<string, unknown>;
const podSpecOf = (o: KubeObject): { spec: Obj; at: (string | number)[] } | null => {
  const spec = o.spec as Obj | undefined;
  if (o.kind === 'Pod') return spec !== undefined && typeof spec === 'object' ? { spec, at: ['spec'] } : null;
  const t = (spec?.template as Obj | undefined)?.spec;
  return t !== null && typeof t === 'object' ? { spec: t as Obj, at: ['spec', 'template', 'spec'] } : null;
};

/** Test rules: real Rule objects, one warning at an existing field and one error at a missing field. */
const latestImage: Rule = {
  id: 'latest-image',
  severity: 'warning',
  seed: 'test',
  title: 'image tag latest',
  rationale: 'Pin the image.',
  kinds: ['Pod', 'Deployment'],
  fixtures: { bad: '', good: '' },
  check(o) {
    const ps = podSpecOf(o);
    const cs = ps?.spec.containers;
    if (ps === null || !Array.isArray(cs)) return [];
    const hits: RuleHit[] = [];
    cs.forEach((c: Obj, i) => {
      if (typeof c?.image === 'string' && c.image.endsWith(':latest')) hits.push({ message: 'pin the image', path: [...ps.at, 'containers', i, 'image'] });
    });
    return hits;
  },
};
const needsScheduler: Rule = {
  id: 'needs-scheduler',
  severity: 'error',
  seed: 'test',
  title: 'schedulerName missing',
  rationale: 'Set it.',
  kinds: ['Deployment'],
  fixtures: { bad: '', good: '' },
  check(o) {
    const ps = podSpecOf(o);
    return ps !== null && ps.spec.schedulerName === undefined ? [{ message: 'set schedulerName', path: [...ps.at, 'schedulerName'] }] : [];
  },
};
const TEST_RULES = [latestImage, needsScheduler];

const at = (f: LocatedFinding): string => `${f.file}:${f.line}:${f.column} ${f.rule} ${f.field}`;

const DEPLOY = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: prod
spec:
  template:
    spec:
      containers:
        - name: a
          image: nginx:1.27
        - name: b
          image: nginx:latest
`;

describe('lintSources: positions', () => {
  it('places a finding at the key of the field it names, and a missing field at the deepest node that exists', () => {
    const r = lintSources([src('d.yaml', `# leading comment\n---\n${DEPLOY}`)], TEST_RULES);
    expect(r.findings.map(at)).toEqual([
      'd.yaml:10:5 needs-scheduler spec.template.spec.schedulerName',
      'd.yaml:15:11 latest-image spec.template.spec.containers[1].image',
    ]);
    expect(r.findings[1]).toMatchObject({ kind: 'Deployment', name: 'web', namespace: 'prod', severity: 'warning', message: 'pin the image' });
    expect(exitCodeOf(r.findings)).toBe(1);
  });

  it('counts lines across documents of a stream and sorts by file, line, column and rule', () => {
    const pod = 'apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec: {containers: [{name: c, image: "x:latest"}]}\n';
    const r = lintSources([src('b.yaml', `${pod}---\n${pod}`), src('a.yaml', pod)], TEST_RULES);
    expect(r.findings.map(at)).toEqual([
      'a.yaml:4:31 latest-image spec.containers[0].image',
      'b.yaml:4:31 latest-image spec.containers[0].image',
      'b.yaml:9:31 latest-image spec.containers[0].image',
    ]);
    expect(exitCodeOf(r.findings)).toBe(0);
    // An input that cannot be read (a syntax error, over a limit) is exit 2, as a missing file is.
    expect(exitCodeOf(lintSources([src('s.yaml', 'a: [\n')], TEST_RULES).findings)).toBe(2);
    expect(exitCodeOf(lintSources([{ file: 'big.yaml', bytes: LIMITS.maxInputBytes + 1 }], TEST_RULES).findings)).toBe(2);
    expect(exitCodeOf(lintSources([src('k.yaml', 'a: 1\na: 2\n')], TEST_RULES).findings)).toBe(1);
    expect(r).toMatchObject({ files: 2, objects: 3 });
  });

  it('expands kind: List and typed lists (items take the list kind without "List") with items[i] positions', () => {
    const list = JSON.stringify(
      { apiVersion: 'v1', kind: 'List', items: [{ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'a' }, spec: { containers: [{ image: 'i:latest' }] } }, 7] },
      null,
      2,
    );
    const typed = 'apiVersion: v1\nkind: PodList\nitems:\n  - metadata: {name: b}\n    spec:\n      containers:\n        - image: j:latest\n';
    const r = lintSources([src('l.json', list), src('t.yaml', typed)], TEST_RULES);
    expect(r.findings.map(at)).toEqual([
      'l.json:14:13 latest-image spec.containers[0].image',
      'l.json:19:5 invalid-object ',
      't.yaml:7:11 latest-image spec.containers[0].image',
    ]);
    expect(r.findings[1]?.message).toBe('List item items[1] is a number, not a Kubernetes object (a mapping with apiVersion and kind)');
    expect(r.findings[2]).toMatchObject({ kind: 'Pod', name: 'b' });
  });

  it('names the helm template a document came from', () => {
    const helm = `---\n# Source: chart/templates/svc.yaml\napiVersion: v1\nkind: Service\nmetadata: {name: s}\n---\n# Source: chart/templates/deploy.yaml\n${DEPLOY}`;
    const r = lintSources([src('-', helm)], TEST_RULES);
    expect(r.findings.map((f) => [f.line, f.rule, f.template])).toEqual([
      [15, 'needs-scheduler', 'chart/templates/deploy.yaml'],
      [20, 'latest-image', 'chart/templates/deploy.yaml'],
    ]);
  });

  it('honours --disable and the per-object annotation', () => {
    const off = DEPLOY.replace('  namespace: prod\n', '  namespace: prod\n  annotations:\n    lint.sits2026.dev/disable: "latest-image"\n');
    expect(lintSources([src('d.yaml', off)], TEST_RULES).findings.map((f) => f.rule)).toEqual(['needs-scheduler']);
    expect(lintSources([src('d.yaml', DEPLOY)], TEST_RULES, { disabled: new Set(['needs-scheduler']) }).findings.map((f) => f.rule)).toEqual(['latest-image']);
  });
});

describe('loadSource: bad input is a finding', () => {
  const problems = (text: string): string[] => loadSource(src('f.yaml', text)).problems.map((p) => `${p.line}:${p.column} ${p.rule}`);

  it('syntax errors, duplicate keys, non-mappings and missing apiVersion/kind, each at its line; unknown kinds pass', () => {
    const text = [
      'apiVersion: v1\nkind: Pod\nmetadata: {name: ok}',
      '- a list',
      'kind: Pod',
      'apiVersion: v1\nkind: 3',
      'a: [1, 2\nb: 2',
      'apiVersion: v1\nkind: Pod\nkind: Pod',
      'apiVersion: x.io/v1\nkind: Unheard',
    ].join('\n---\n');
    const l = loadSource(src('f.yaml', text));
    expect(l.problems.map((p) => `${p.line}:${p.column} ${p.rule} ${p.message}`)).toEqual([
      '5:1 invalid-object the document is a sequence, not a Kubernetes object (a mapping with apiVersion and kind)',
      '7:1 invalid-object the document has no apiVersion',
      '10:1 invalid-object kind must be a non-empty string, got 3',
      expect.stringMatching(/^1[23]:\d+ yaml-syntax /),
      '17:1 duplicate-key Map keys must be unique',
    ]);
    expect(l.objects.map((o) => [o.document, o.obj.kind])).toEqual([
      [0, 'Pod'],
      [6, 'Unheard'],
    ]);
  });

  it('skips empty documents (a trailing ---, a helm template that rendered nothing)', () => {
    expect(problems('---\n# Source: c/templates/empty.yaml\n---\napiVersion: v1\nkind: Pod\n---\n')).toEqual([]);
    expect(problems('')).toEqual([]);
  });

  it('nesting 10,000 deep (flow, block, JSON) is one bounded finding, not a stack overflow', () => {
    const flow = `apiVersion: v1\nkind: Pod\nspec: ${'['.repeat(10_000)}${']'.repeat(10_000)}\n`;
    // Compact block sequences (`- - - 1`) nest one level per two characters; indented maps would need 50 MB.
    const block = `apiVersion: v1\nkind: Pod\nspec:\n  ${'- '.repeat(10_000)}1\n`;
    // Built as text: JSON.stringify itself overflows the stack of a test worker at this depth.
    const jsonText = `{"apiVersion": "v1", "kind": "Pod", "spec": ${'{"a": '.repeat(10_000)}1${'}'.repeat(10_000)}}`;
    for (const text of [flow, block, jsonText]) {
      const p = loadSource(src('f.yaml', text)).problems;
      expect(p).toHaveLength(1);
      expect(p[0]?.rule).toBe('input-too-large');
      expect(p[0]?.message).toMatch(/nest/);
      expect(p[0]?.line).toBeGreaterThanOrEqual(1);
    }
    // Just inside the limit still lints.
    let ok: unknown = 1;
    for (let i = 0; i < LIMITS.maxNesting - 2; i++) ok = [ok];
    expect(loadSource(src('f.json', JSON.stringify({ apiVersion: 'v1', kind: 'Pod', spec: ok }))).problems).toEqual([]);
  });

  it('stops a billion-laughs document at maxAliasCount', () => {
    const lol = ['apiVersion: v1', 'kind: ConfigMap', 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
    for (let i = 1; i < 9; i++)
      lol.push(
        `${'b'.repeat(i)}: &${'b'.repeat(i)} [${Array(9)
          .fill(`*${i === 1 ? 'a' : 'b'.repeat(i - 1)}`)
          .join(',')}]`,
      );
    const p = loadSource(src('f.yaml', lol.join('\n'))).problems;
    expect(p.map((x) => `${x.line}:${x.column} ${x.rule}`)).toEqual(['1:1 input-too-large']);
    expect(p[0]?.message).toMatch(/alias.*maxAliasCount 100/i);
  });

  it('an input over maxInputBytes is one finding at 1:1 and is not parsed', () => {
    expect(loadSource({ file: 'big.yaml', bytes: 20_000_000 }).problems).toEqual([
      expect.objectContaining({ line: 1, column: 1, rule: 'input-too-large', message: expect.stringContaining('limit of 16777216 (maxInputBytes)') }),
    ]);
    const small = { ...LIMITS, maxInputBytes: 10 };
    expect(loadSource(src('f.yaml', 'apiVersion: v1\nkind: Pod\n'), { limits: small }).problems.map((p) => p.rule)).toEqual(['input-too-large']);
  });

  it('a huge string inside the limits lints normally', () => {
    const text = `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata:\n  blob: "${'x'.repeat(4_000_000)}"\n`;
    const l = loadSource(src('f.yaml', text));
    expect(l.problems).toEqual([]);
    expect(l.objects).toHaveLength(1);
  });
});

describe('readInputs', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sits-lint-'));
  mkdirSync(join(dir, 'b', 'c'), { recursive: true });
  writeFileSync(join(dir, 'z.yaml'), 'apiVersion: v1\nkind: Pod\n');
  writeFileSync(join(dir, 'a.json'), '{"apiVersion":"v1","kind":"Pod"}');
  writeFileSync(join(dir, 'notes.txt'), 'not yaml');
  writeFileSync(join(dir, 'b', 'c', 'x.yml'), 'apiVersion: v1\nkind: Pod\n');
  writeFileSync(join(dir, 'b', 'w.YAML'), 'apiVersion: v1\nkind: Pod\n');
  symlinkSync(dir, join(dir, 'b', 'loop'));
  const noStdin = (): Promise<never> => Promise.reject(new Error('stdin not expected'));

  it('walks folders recursively in sorted order, taking *.yaml, *.yml and *.json, not following folder links', async () => {
    const r = await readInputs([dir], noStdin);
    expect(r.sources.map((s) => s.file.slice(dir.length + 1))).toEqual(['a.json', 'b/c/x.yml', 'b/w.YAML', 'z.yaml']);
    expect(r.unreadable).toEqual([]);
  });

  it('takes a named file whatever its extension, and stdin for -', async () => {
    const r = await readInputs([join(dir, 'notes.txt'), '-'], () => Promise.resolve({ text: 'apiVersion: v1\nkind: Pod\n', bytes: 25 }));
    expect(r.sources.map((s) => s.file)).toEqual([join(dir, 'notes.txt'), '<stdin>']);
    expect(lintSources(r.sources, TEST_RULES).findings.map((f) => f.rule)).toEqual(['invalid-object']);
  });

  it('names what cannot be read', async () => {
    const r = await readInputs([join(dir, 'nope.yaml'), dir], noStdin);
    expect(r.unreadable).toEqual([{ path: join(dir, 'nope.yaml'), message: 'cannot read: ENOENT (check the path; the other inputs were linted)' }]);
    expect(r.sources).toHaveLength(4);
  });

  it('refuses binary files and stdin (a NUL byte, bytes that are not UTF-8) in one line, echoing nothing', async () => {
    const bin = join(dir, 'model.bin');
    writeFileSync(bin, Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x00, 0x01, 0x41]));
    const latin1 = join(dir, 'latin1.txt');
    writeFileSync(latin1, Buffer.from('a: caf\xe9\n', 'latin1'));
    const r = await readInputs([bin, latin1, '-'], () => Promise.resolve({ text: '', bytes: 3, binary: true }));
    expect(r.sources).toEqual([]);
    expect(r.unreadable.map((u) => u.path)).toEqual([bin, latin1, '<stdin>']);
    for (const u of r.unreadable)
      expect(u.message).toBe('is a binary file, not YAML or JSON: nothing was read from it (give sits lint manifests; the other inputs were linted)');
    expect(decodeText(Buffer.from('a: café\n'))).toBe('a: café\n');
    expect(decodeText(Buffer.from([0x61, 0x00]))).toBeNull();
  });

  it('refuses an unrendered Helm chart once, with the helm template command: a chart folder, files of it, stdin', async () => {
    const chart = join(dir, 'charts', 'train');
    mkdirSync(join(chart, 'templates'), { recursive: true });
    writeFileSync(join(chart, 'Chart.yaml'), 'apiVersion: v2\nname: train\nversion: 0.1.0\n');
    writeFileSync(
      join(chart, 'templates', 'job.yaml'),
      'apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {{ .Release.Name }}\n{{- if .Values.x }}\n{{- end }}\n',
    );
    writeFileSync(join(chart, 'templates', 'svc.yaml'), 'kind: Service\nmetadata: {name: {{ include "train.name" . }}}\n');
    const help = `this is a Helm chart: lint its rendered output: helm template NAME ${chart} | sits lint -`;
    const folder = await readInputs([join(dir, 'charts')], noStdin);
    expect(folder).toEqual({ sources: [], unreadable: [{ path: chart, message: help }] });
    const files = await readInputs([join(chart, 'templates', 'job.yaml'), join(chart, 'templates', 'svc.yaml')], noStdin);
    expect(files).toEqual({ sources: [], unreadable: [{ path: chart, message: help }] });
    const stdin = await readInputs(['-'], () => Promise.resolve({ text: '{{- if .Values.enabled }}\nkind: Pod\n{{- end }}\n', bytes: 40 }));
    expect(stdin.unreadable).toEqual([{ path: '<stdin>', message: 'this is a Helm chart: lint its rendered output: helm template NAME DIR | sits lint -' }]);
  });

  it('tells Helm templates from rendered manifests that carry {{ }} in strings (Prometheus, Alertmanager, Argo)', () => {
    expect(isHelmTemplate('metadata:\n  name: {{ .Release.Name }}\n')).toBe(true);
    expect(isHelmTemplate('{{- include "x.labels" . | nindent 4 }}\n')).toBe(true);
    expect(isHelmTemplate('{{ end }}\n')).toBe(true);
    expect(isHelmTemplate('annotations:\n  summary: "{{ $labels.instance }} down for {{ $value }}"\n')).toBe(false);
    expect(isHelmTemplate('data:\n  slack.tmpl: |\n    {{ define "slack" }}{{ range .Alerts }}x{{ end }}{{ end }}\n')).toBe(false);
    expect(isHelmTemplate('args: ["{{inputs.parameters.message}}"]\n')).toBe(false);
  });

  it('does not read a 20 MB file: one input-too-large finding, quickly', async () => {
    const big = join(dir, 'big.yaml');
    const text = `apiVersion: v1\nkind: ConfigMap\ndata:\n  x: "${'y'.repeat(20_000_000)}"\n`;
    writeFileSync(big, text);
    const t = process.cpuUsage();
    const r = await readInputs([big], noStdin);
    expect(r.sources).toEqual([{ file: big, bytes: text.length }]);
    expect(lintSources(r.sources, TEST_RULES).findings.map(at)).toEqual([`${big}:1:1 input-too-large `]);
    expect(cpuMsSince(t)).toBeLessThan(2_000);
  });
});

describe('the js-yaml fast path', () => {
  const texts = [
    DEPLOY,
    `# c\n---\n${DEPLOY}---\n---\n  apiVersion: v1\n  kind: Pod\n  spec:\n    containers: [{image: "a:latest"}]\n--- !!map\napiVersion: v1\nkind: Pod\nspec: {containers: [{image: b:latest}]}\n`,
    `---\n# Source: c/templates/a.yaml\n${DEPLOY}---\n# Source: c/templates/b.yaml\n- not an object\n`,
    JSON.stringify(
      {
        apiVersion: 'v1',
        kind: 'List',
        items: [{ apiVersion: 'apps/v1', kind: 'Deployment', spec: { template: { spec: { containers: [{ image: 'x:latest' }] } } } }, 'str'],
      },
      null,
      1,
    ),
    'apiVersion: v1\r\nkind: Pod\r\nspec:\r\n  containers:\r\n  - image: c:latest\r\n',
    // Anchors, duplicate keys and syntax errors go through the exact path.
    'apiVersion: v1\nkind: Pod\nspec: &s {containers: [{image: d:latest}]}\nx: *s\n',
    'apiVersion: v1\nkind: Pod\nkind: Pod\n',
    'apiVersion: v1\nkind: [\n',
  ];

  it('gives exactly the findings and objects of the exact path', () => {
    for (const t of texts) {
      const fast = lintSources([src('f.yaml', t)], TEST_RULES);
      const exact = lintSources([src('f.yaml', t)], TEST_RULES, {}, { exact: true });
      expect(fast, t).toEqual(exact);
      expect(loadSource(src('f.yaml', t)).objects.map((o) => o.obj)).toEqual(loadSource(src('f.yaml', t), { exact: true }).objects.map((o) => o.obj));
    }
    expect(lintSources([src('f.yaml', texts[1] as string)], TEST_RULES).findings.map((f) => `${f.line}:${f.column} ${f.rule}`)).toEqual([
      '10:5 needs-scheduler',
      '15:11 latest-image',
      '21:19 latest-image',
      '25:22 latest-image',
    ]);
  });
});

describe('with the registered RULES', () => {
  // The facts the rules' fixtures are written for: mixed GPU models, RDMA nodes.
  const cluster = { gpuModels: ['A100-80G', 'L4'], rdma: true, schedulerNames: ['sits-scheduler'] };

  it("each rule's fixtures through files: bad is found at a line of the fixture, good is not; fast and exact paths agree", () => {
    for (const r of RULES) {
      const bad = lintSources([src(`${r.id}-bad.yaml`, r.fixtures.bad)], RULES, { cluster });
      const lines = r.fixtures.bad.split('\n').length;
      const own = bad.findings.filter((f) => f.rule === r.id);
      expect(own.length, r.id).toBeGreaterThan(0);
      for (const f of own) {
        expect(f.line, r.id).toBeGreaterThanOrEqual(1);
        expect(f.line, r.id).toBeLessThanOrEqual(lines);
      }
      expect(bad, r.id).toEqual(lintSources([src(`${r.id}-bad.yaml`, r.fixtures.bad)], RULES, { cluster }, { exact: true }));
      expect(
        lintSources([src('good.yaml', r.fixtures.good)], RULES, { cluster }).findings.filter((f) => f.rule === r.id),
        r.id,
      ).toEqual([]);
    }
  });

  it('lints a mixed set without crashing; every finding has a position inside its file', () => {
    const texts = [
      DEPLOY,
      'apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 1000000\npreemptionPolicy: PreemptLowerPriority\n',
      'apiVersion: v1\nkind: Service\nmetadata: {name: rdzv}\nspec: {selector: {app: t}, ports: [{port: 29500}]}\n',
    ];
    const sources = texts.map((t, i) => src(`m${i}.yaml`, t));
    const r = lintSources(sources, RULES, { cluster: { schedulerNames: ['sits-scheduler'], gpuModels: ['A100', 'L4'], rdma: true } });
    for (const f of r.findings) {
      const lines = (texts[Number(f.file.slice(1, -5))] ?? '').split('\n').length;
      expect(f.line).toBeGreaterThanOrEqual(1);
      expect(f.line).toBeLessThanOrEqual(lines);
      expect(f.column).toBeGreaterThanOrEqual(1);
    }
  });
});
