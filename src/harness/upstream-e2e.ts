/**
 * The upstream Kubernetes e2e suite (k8s.io/kubernetes/test/e2e, built as `e2e.test` by tools/k8s/ensure-e2e.mjs):
 * find or build it, run a ginkgo focus against a cluster, and read ginkgo's JSON report into one line per case.
 * See docs/conformance.md and ADR 0073.
 */
import { spawn } from 'node:child_process';
import { createWriteStream, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const ENSURE_E2E = join(REPO_ROOT, 'tools/k8s/ensure-e2e.mjs');

/** Runs a tools/…/ensure*.mjs script and resolves to the folder it prints last (its progress goes to `log`). */
export function runEnsureScript(script: string, log: (line: string) => void): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: string[] = [];
    const errTail: string[] = [];
    createInterface({ input: child.stdout }).on('line', (l) => out.push(l));
    createInterface({ input: child.stderr }).on('line', (l) => {
      errTail.push(l);
      if (errTail.length > 40) errTail.shift();
      log(l);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const dir = out
        .filter((l) => l.trim() !== '')
        .at(-1)
        ?.trim();
      if (code === 0 && dir !== undefined) resolvePromise(dir);
      else reject(new Error(`${script} failed (exit code ${code}):\n${errTail.join('\n')}`));
    });
  });
}

let ensuredSuite: Promise<string> | undefined;

/** The folder holding `e2e.test` (built on first use: many minutes; cached by k8s version). Once per process. */
export function ensureE2eSuite(log: (line: string) => void = (l) => process.stderr.write(`${l}\n`)): Promise<string> {
  ensuredSuite ??= runEnsureScript(ENSURE_E2E, log).catch((e: unknown) => {
    ensuredSuite = undefined;
    throw e;
  });
  return ensuredSuite;
}

export type CaseState = 'passed' | 'failed' | 'skipped';

/** One upstream case as run (or not run) by the suite. */
export interface CaseResult {
  /** Ginkgo's full text: the containers' texts and the case's, space-separated (what --ginkgo.focus matches). */
  readonly name: string;
  readonly state: CaseState;
  /** Ginkgo's own state when it is not plain passed/failed/skipped (panicked, timedout, interrupted, aborted). */
  readonly ginkgoState?: string;
  readonly seconds: number;
  /** Failure message (first lines) or skip message. */
  readonly message?: string;
  /** file:line of the failure, in the upstream sources. */
  readonly location?: string;
}

interface GinkgoSpecReport {
  readonly ContainerHierarchyTexts?: readonly string[] | null;
  readonly LeafNodeText?: string;
  readonly LeafNodeType?: string;
  readonly State?: string;
  readonly RunTime?: number;
  readonly Failure?: { readonly Message?: string; readonly Location?: { readonly FileName?: string; readonly LineNumber?: number } };
}

interface GinkgoSuiteReport {
  readonly SpecReports?: readonly GinkgoSpecReport[] | null;
}

/**
 * The cases of a ginkgo JSON report (`--ginkgo.json-report`) whose full text matches `focus`, in run order.
 * Suite-level nodes (SynchronizedBeforeSuite, ReportAfterSuite …) appear only when they failed, named by their
 * node type: a failed suite setup explains why every case was skipped. A case ginkgo filtered out by `--ginkgo.skip`
 * is `skipped` with no message; the caller names the reason.
 */
export function readGinkgoReport(json: string, focus: RegExp): CaseResult[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (e) {
    throw new Error(`ginkgo JSON report: ${(e as Error).message}`);
  }
  if (!Array.isArray(parsed)) throw new Error('ginkgo JSON report: expected an array of suite reports');
  const out: CaseResult[] = [];
  for (const suite of parsed as GinkgoSuiteReport[]) {
    for (const s of suite.SpecReports ?? []) {
      const isCase = s.LeafNodeType === 'It';
      const name = isCase ? [...(s.ContainerHierarchyTexts ?? []), s.LeafNodeText ?? ''].join(' ') : (s.LeafNodeType ?? 'suite node');
      const ginkgoState = s.State ?? 'unknown';
      const state: CaseState = ginkgoState === 'passed' ? 'passed' : ginkgoState === 'skipped' || ginkgoState === 'pending' ? 'skipped' : 'failed';
      if (isCase ? !focus.test(name) : state !== 'failed') continue;
      const msg = s.Failure?.Message?.trim();
      const loc = s.Failure?.Location;
      out.push({
        name,
        state,
        ...(state === 'failed' && ginkgoState !== 'failed' ? { ginkgoState } : {}),
        seconds: Math.round((s.RunTime ?? 0) / 1e7) / 100,
        ...(msg === undefined || msg === '' ? {} : { message: msg.split('\n').slice(0, 12).join('\n').slice(0, 2000) }),
        ...(loc?.FileName === undefined ? {} : { location: `${loc.FileName.replace(/^.*\/(test\/e2e\/)/, '$1')}:${loc.LineNumber ?? 0}` }),
      });
    }
  }
  return out;
}

/** A regular expression that matches any of `texts` literally (for --ginkgo.focus / --ginkgo.skip). */
export function anyOf(texts: readonly string[]): string {
  return texts.map((t) => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|');
}

export interface SuiteRunOptions {
  readonly binDir: string;
  readonly kubeconfig: string;
  /** Ginkgo focus regular expression. */
  readonly focus: string;
  /** Ginkgo skip regular expression (empty: none). */
  readonly skip: string;
  /** Where ginkgo writes its JSON report. */
  readonly reportPath: string;
  /** Where the suite's output goes (it is long). */
  readonly logPath: string;
  /** Ginkgo's own timeout for the whole run (it reports the cases it did not reach). */
  readonly timeoutMs: number;
  readonly log?: (line: string) => void;
}

/** Runs e2e.test once; resolves to its exit code (non-zero when a case failed) once the report is written. */
export function runE2eSuite(o: SuiteRunOptions): Promise<number> {
  const args = [
    `--kubeconfig=${o.kubeconfig}`,
    '--provider=skeleton',
    `--ginkgo.focus=${o.focus}`,
    ...(o.skip === '' ? [] : [`--ginkgo.skip=${o.skip}`]),
    `--ginkgo.json-report=${o.reportPath}`,
    `--ginkgo.timeout=${Math.max(1, Math.round(o.timeoutMs / 1000))}s`,
    '--ginkgo.no-color',
    '--ginkgo.v',
    // The cluster has no kube-system add-ons to wait for, and no kubelet whose logs could be dumped.
    '--minStartupPods=0',
    '--dump-logs-on-failure=false',
    // The suite's namespaces are deleted by kube-controller-manager's namespace controller; wait for it so the next case starts clean.
    '--delete-namespace-on-failure=true',
  ];
  const out = createWriteStream(o.logPath, { flags: 'a' });
  return new Promise((resolvePromise, reject) => {
    const child = spawn(join(o.binDir, 'e2e.test'), args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
      env: { ...process.env, KUBECONFIG: o.kubeconfig },
    });
    const kill = (): void => {
      if (child.pid !== undefined) {
        try {
          process.kill(-child.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    };
    process.once('exit', kill);
    const onLine = (l: string): void => {
      out.write(`${l}\n`);
      // Ginkgo's progress lines name each case as it starts and ends; the rest stays in the log file.
      if (/^(•|\[(FAILED|PANICKED|SKIPPED|TIMEDOUT)\]|Ran \d+ of|(PASS|FAIL)!?$)/.test(l.trim())) o.log?.(l.trim());
    };
    createInterface({ input: child.stdout }).on('line', onLine);
    createInterface({ input: child.stderr }).on('line', onLine);
    child.on('error', (e) => {
      process.removeListener('exit', kill);
      reject(e);
    });
    child.on('close', (code, signal) => {
      process.removeListener('exit', kill);
      out.end(() => resolvePromise(code ?? (signal === null ? 1 : 128)));
    });
  });
}

/** Reads the report written by runE2eSuite (missing or broken: an error naming the file). */
export function readReportFile(path: string, focus: RegExp): CaseResult[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(`${path}: the suite wrote no report (${(e as Error).message})`);
  }
  try {
    return readGinkgoReport(text, focus);
  } catch (e) {
    throw new Error(`${path}: ${(e as Error).message}`);
  }
}
