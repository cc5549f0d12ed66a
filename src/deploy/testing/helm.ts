/**
 * The real `helm` binary for tests: the path in SITS_HELM (scripts/test.mjs sets it), else the one
 * `node tools/helm/ensure.mjs` prints (it builds and caches Helm from the Go module proxy when missing).
 */
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseAllDocuments, stringify } from 'yaml';
import type { Json } from '../tree.ts';
import { syncDeployFiles } from '../write.ts';
import { CHART_DIR, type GeneratedFile } from '../bundle.ts';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const ENSURE_SCRIPT = join(REPO_ROOT, 'tools/helm/ensure.mjs');

let ensured: Promise<string> | undefined;

let scratchDir: string | undefined;
/** One temp folder for charts, values files and helm homes; removeHelmScratch() removes it. */
function scratch(prefix: string): string {
  scratchDir ??= mkdtempSync(join(tmpdir(), 'sits-helm-test-'));
  return mkdtempSync(join(scratchDir, prefix));
}

/** Call in `afterAll` (vitest ends its workers without running process 'exit' hooks). */
export function removeHelmScratch(): void {
  if (scratchDir !== undefined) rmSync(scratchDir, { recursive: true, force: true });
  scratchDir = undefined;
}

/** Resolves to the helm binary (once per process). A first build takes minutes: call it in a `beforeAll` with a long timeout. */
export function ensureHelm(): Promise<string> {
  ensured ??= new Promise<string>((resolvePromise, reject) => {
    // ensure.mjs returns SITS_HELM itself when set, after checking it is executable.
    const child = spawn(process.execPath, [ENSURE_SCRIPT], { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: string[] = [];
    const err: string[] = [];
    createInterface({ input: child.stdout }).on('line', (l) => out.push(l));
    createInterface({ input: child.stderr }).on('line', (l) => {
      err.push(l);
      process.stderr.write(`${l}\n`);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const bin = out
        .filter((l) => l.trim() !== '')
        .at(-1)
        ?.trim();
      if (code === 0 && bin !== undefined) resolvePromise(bin);
      else reject(new Error(`${ENSURE_SCRIPT} failed (exit code ${code}):\n${err.slice(-20).join('\n')}`));
    });
  }).catch((e: unknown) => {
    ensured = undefined;
    throw e;
  });
  return ensured;
}

export interface HelmRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs helm with its config, cache and data homes in a fresh folder, so no user setting or repository is read. */
export function runHelm(bin: string, args: readonly string[]): HelmRun {
  const home = scratch('home-');
  const r = spawnSync(bin, args, {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '', HOME: home, HELM_CONFIG_HOME: home, HELM_CACHE_HOME: home, HELM_DATA_HOME: home, KUBECONFIG: join(home, 'none') },
    timeout: 60_000,
  });
  rmSync(home, { recursive: true, force: true });
  if (r.error !== undefined) throw r.error;
  return { code: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** Writes the generated files (sits deploy --out) to a fresh folder; returns the chart's folder. */
export function writeChart(files?: readonly GeneratedFile[]): string {
  const dir = scratch('chart-');
  syncDeployFiles(dir, files === undefined ? {} : { files });
  return join(dir, CHART_DIR);
}

/** A values file with `values` in it, for `-f`. */
export function valuesFile(values: unknown): string {
  const p = join(scratch('values-'), 'values.yaml');
  writeFileSync(p, stringify(values));
  return p;
}

/** Every object of a multi-document YAML stream (empty documents skipped); throws on a YAML error. */
export function parseManifests(text: string): Json[] {
  const out: Json[] = [];
  for (const d of parseAllDocuments(text)) {
    if (d.errors.length > 0) throw new Error(d.errors.map((e) => e.message).join('; '));
    const o = d.toJS() as Json;
    if (o !== null && o !== undefined) out.push(o);
  }
  return out;
}

/**
 * `helm template sits CHART --include-crds` with extra args (`-f FILE`, `--set k=v`, `--namespace`), parsed.
 * Throws with Helm's message when it fails.
 */
export function helmTemplate(bin: string, chartDir: string, extra: readonly string[] = []): Json[] {
  const r = runHelm(bin, ['template', 'sits', chartDir, '--include-crds', ...extra]);
  if (r.code !== 0) throw new Error(`helm template failed (exit code ${r.code}): ${r.stderr.trim()}`);
  return parseManifests(r.stdout);
}

/**
 * templates/NOTES.txt as Helm renders it for these args (`helm template` leaves NOTES out, and `helm install
 * --dry-run` needs a cluster): a copy of the chart renders the same text through `tpl` into a ConfigMap.
 */
export function helmNotes(bin: string, chartDir: string, extra: readonly string[] = []): string {
  const dir = join(scratch('notes-'), 'sits');
  cpSync(chartDir, dir, { recursive: true });
  cpSync(join(dir, 'templates/NOTES.txt'), join(dir, 'notes.txt'));
  writeFileSync(
    join(dir, 'templates/zz-notes.yaml'),
    'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: rendered-notes\ndata:\n  notes: {{ tpl (.Files.Get "notes.txt") . | quote }}\n',
  );
  const cm = helmTemplate(bin, dir, extra).find((o) => (o as { metadata?: { name?: string } }).metadata?.name === 'rendered-notes') as
    { data: { notes: string } } | undefined;
  if (cm === undefined) throw new Error('the notes were not rendered');
  return cm.data.notes;
}
