/**
 * `sits bench startup`: how long the installed command takes to start and what it holds (issue 30, ADR 0171) —
 * `sits --version` and `sits lint` of one file, each in a fresh process, beside `node -e 0` on the same machine.
 * Wall time from spawn to exit; peak RSS from the child's own getrusage, written on exit by a preload.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { nearestRank } from '../../core/stats.ts';

/** The `sits` entry of this installation (the checkout's or the image's /app). */
const SITS = fileURLToPath(new URL('../../../bin/sits.mjs', import.meta.url));

/** Writes the process's peak RSS (getrusage, KiB) to fd 3 on exit: loaded with --import before the command. */
const RSS_PRELOAD = `data:text/javascript,${encodeURIComponent("import { writeSync } from 'node:fs'; process.on('exit', () => { try { writeSync(3, String(process.resourceUsage().maxRSS)); } catch {} });")}`;

export interface StartupCase {
  readonly name: string;
  /** Median, p90 and slowest wall time of the warm runs, ms. */
  readonly wallMs: { readonly p50: number; readonly p90: number; readonly max: number };
  /** The first run (compile cache cold for this build), ms. */
  readonly firstRunMs: number;
  readonly maxRssMiB: number;
  readonly runs: number;
}

export interface StartupResult {
  /** The `sits` entry measured (bin/sits.mjs of this installation unless --entry). */
  readonly entry: string;
  readonly node: string;
  readonly cpuCores: number;
  readonly loadAverage1m: number;
  readonly goalsMs: { readonly version: number; readonly lintOneFile: number };
  readonly cases: readonly StartupCase[];
  readonly baseline: StartupCase;
}

interface Sample {
  readonly ms: number;
  readonly rssKiB: number;
}

function once(args: readonly string[], cwd: string): Promise<Sample> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, ['--import', RSS_PRELOAD, ...args], { cwd, stdio: ['ignore', 'ignore', 'pipe', 'pipe'] });
    let rss = '';
    let err = '';
    (child.stdio[3] as NodeJS.ReadableStream).setEncoding('utf8').on('data', (d: string) => (rss += d));
    child.stderr?.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => {
      const ms = performance.now() - started;
      if (code !== 0) reject(new Error(`${args.join(' ')} exited with ${code}: ${err.trim()}`));
      else resolve({ ms, rssKiB: Number(rss) });
    });
  });
}

async function measure(name: string, args: readonly string[], runs: number, cwd: string, progress: (m: string) => void): Promise<StartupCase> {
  const first = await once(args, cwd);
  const samples: Sample[] = [];
  for (let i = 0; i < runs; i++) samples.push(await once(args, cwd));
  const ms = samples.map((s) => s.ms).sort((a, b) => a - b);
  const r = (x: number): number => Math.round(x * 10) / 10;
  const c: StartupCase = {
    name,
    wallMs: { p50: r(nearestRank(ms, 50) ?? 0), p90: r(nearestRank(ms, 90) ?? 0), max: r(ms[ms.length - 1] ?? 0) },
    firstRunMs: r(first.ms),
    maxRssMiB: r(Math.max(first.rssKiB, ...samples.map((s) => s.rssKiB)) / 1024),
    runs,
  };
  progress(`${name}: p50 ${c.wallMs.p50} ms, p90 ${c.wallMs.p90} ms, first ${c.firstRunMs} ms, RSS ${c.maxRssMiB} MiB`);
  return c;
}

/** A Pod with one GPU: what `sits lint` reads in the lint case. */
const LINT_INPUT = 'apiVersion: v1\nkind: Pod\nmetadata: {name: train-0}\nspec:\n  schedulerName: sits-scheduler\n  containers:\n    - name: train\n      image: registry.example/train:1.0\n      resources: {limits: {nvidia.com/gpu: 1, cpu: "8", memory: 64Gi}}\n';

export async function runStartupBench(opts: { readonly runs: number; readonly entry?: string; readonly progress?: (m: string) => void }): Promise<StartupResult> {
  const sits = opts.entry ?? SITS;
  const progress = opts.progress ?? (() => undefined);
  const dir = mkdtempSync(join(tmpdir(), 'sits-startup-'));
  try {
    const file = join(dir, 'pod.yaml');
    writeFileSync(file, LINT_INPUT);
    const loadAverage1m = Math.round((loadavg()[0] ?? 0) * 100) / 100;
    const baseline = await measure('node -e 0', ['-e', '0'], opts.runs, dir, progress);
    const cases = [await measure('sits --version', [sits, '--version'], opts.runs, dir, progress), await measure('sits lint pod.yaml', [sits, 'lint', file], opts.runs, dir, progress)];
    return { entry: sits, node: process.version, cpuCores: cpus().length, loadAverage1m, goalsMs: { version: 300, lintOneFile: 600 }, cases, baseline };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
