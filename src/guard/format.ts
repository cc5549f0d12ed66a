/**
 * `sits lint` output: text for people (`file:line:column: severity rule-id message`), JSON for scripts and
 * SARIF 2.1.0 for CI code scanning. Findings arrive sorted (sortFindings), so every format is deterministic.
 */
import { pathToFileURL } from 'node:url';
import type * as Sarif from 'sarif';
import type { LocatedFinding, RuleInfo } from './lint-files.ts';

export type OutputFormat = 'text' | 'json' | 'sarif';
export const OUTPUT_FORMATS: readonly OutputFormat[] = ['text', 'json', 'sarif'];

export interface RunSummary {
  readonly files: number;
  readonly objects: number;
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

/** One line per finding, then a summary line. A `helm template` finding names its template after the message. */
export function formatText(findings: readonly LocatedFinding[], run: RunSummary): string {
  const out: string[] = [];
  for (const f of findings)
    out.push(`${f.file}:${f.line}:${f.column}: ${f.severity} ${f.rule} ${f.message}${f.template === undefined ? '' : ` (template ${f.template})`}`);
  const errors = findings.filter((f) => f.severity === 'error').length;
  const warnings = findings.length - errors;
  out.push(`${plural(errors, 'error')}, ${plural(warnings, 'warning')} in ${plural(run.objects, 'object')} from ${plural(run.files, 'input')}`);
  return `${out.join('\n')}\n`;
}

/**
 * `-o json`: an array of {file, line, column, rule, severity, message, field, kind, name, namespace} (plus
 * `template` for `helm template` input), keys always in this order; kind, name and namespace are null when the
 * object has none (a syntax error, an object without metadata).
 */
export function formatJson(findings: readonly LocatedFinding[]): string {
  const rows = findings.map((f) => ({
    file: f.file,
    line: f.line,
    column: f.column,
    rule: f.rule,
    severity: f.severity,
    message: f.message,
    field: f.field,
    kind: f.kind,
    name: f.name,
    namespace: f.namespace,
    ...(f.template === undefined ? {} : { template: f.template }),
  }));
  return `${JSON.stringify(rows, null, 2)}\n`;
}

export interface SarifOptions {
  /** Tool version for tool.driver.version. */
  readonly version: string;
  /**
   * Absolute base URI of the repository's files (e.g. https://github.com/org/sits/blob/main/): rules then get
   * `helpUri` = base + `docs/rules.md#<id>`. SARIF requires helpUri to be absolute, so without a base the
   * rule's help text names `docs/rules.md#<id>` instead.
   */
  readonly docsBase?: string;
}

const SARIF_SCHEMA = 'https://json.schemastore.org/sarif-2.1.0.json';

/** A file name as a SARIF artifact URI: absolute paths as file:// URIs, relative ones as relative references. */
export function artifactUri(file: string): string {
  if (file.startsWith('/')) return pathToFileURL(file).href;
  return encodeURI(file.replace(/\\/g, '/')).replace(/[?#]/g, encodeURIComponent);
}

/** SARIF 2.1.0: one run, the rule list from the rules' metadata, one result per finding with its region. */
export function formatSarif(findings: readonly LocatedFinding[], rules: readonly RuleInfo[], opts: SarifOptions): string {
  const index = new Map<string, number>();
  const descriptors: Sarif.ReportingDescriptor[] = rules.map((r, i) => {
    index.set(r.id, i);
    const doc = `docs/rules.md#${r.id}`;
    return {
      id: r.id,
      shortDescription: { text: r.title },
      fullDescription: { text: r.rationale ?? r.title },
      ...(opts.docsBase === undefined ? {} : { helpUri: new URL(doc, opts.docsBase).href }),
      help: { text: `${r.rationale ?? r.title} See ${doc}.`, markdown: `${r.rationale ?? r.title}\n\nSee [${doc}](${doc}).` },
      defaultConfiguration: { level: r.severity },
      properties: { ...(r.seed === undefined ? {} : { seed: r.seed }), tags: ['kubernetes', 'ml'] },
    };
  });
  const results: Sarif.Result[] = findings.map((f) => {
    const i = index.get(f.rule);
    const object = [f.namespace, f.kind, f.name].filter((s) => s !== null).join('/');
    return {
      ruleId: f.rule,
      ...(i === undefined ? {} : { ruleIndex: i }),
      level: f.severity,
      message: { text: f.message },
      locations: [
        {
          physicalLocation: { artifactLocation: { uri: artifactUri(f.file) }, region: { startLine: f.line, startColumn: f.column } },
          ...(object === '' ? {} : { logicalLocations: [{ fullyQualifiedName: f.field === '' ? object : `${object}:${f.field}`, kind: 'object' }] }),
        },
      ],
      ...(f.template === undefined && f.field === ''
        ? {}
        : { properties: { ...(f.field === '' ? {} : { field: f.field }), ...(f.template === undefined ? {} : { template: f.template }) } }),
    };
  });
  const log: Sarif.Log = {
    $schema: SARIF_SCHEMA,
    version: '2.1.0',
    runs: [{ tool: { driver: { name: 'sits-lint', version: opts.version, rules: descriptors } }, results }],
  };
  return `${JSON.stringify(log, null, 2)}\n`;
}

export function formatFindings(
  format: OutputFormat,
  findings: readonly LocatedFinding[],
  run: RunSummary,
  rules: readonly RuleInfo[],
  sarif: SarifOptions,
): string {
  if (format === 'json') return formatJson(findings);
  if (format === 'sarif') return formatSarif(findings, rules, sarif);
  return formatText(findings, run);
}
