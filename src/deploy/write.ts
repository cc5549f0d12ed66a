/** Writes (or checks) the generated deployment files in a folder; used by scripts/gen-deploy.ts and `sits deploy`. */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { CHART_DIR, deployFiles, type GeneratedFile } from './bundle.ts';

export interface SyncResult {
  readonly total: number;
  /** Files written (or, with `check`, that would be). */
  readonly changed: string[];
  /** Files inside the generated chart folder that the generator does not produce any more. */
  readonly stale: string[];
}

function walk(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? walk(p) : [p];
  });
}

/** The chart folder is owned by the generator: anything else in it is stale. Other files in `dir` are left alone. */
export function syncDeployFiles(dir: string, opts: { check?: boolean; files?: readonly GeneratedFile[] } = {}): SyncResult {
  const files = opts.files ?? deployFiles();
  const wanted = new Set(files.map((f) => f.path));
  const changed = files.filter((f) => {
    const p = join(dir, f.path);
    return !existsSync(p) || readFileSync(p, 'utf8') !== f.content;
  });
  const stale = walk(join(dir, CHART_DIR))
    .map((p) => relative(dir, p).split(sep).join('/'))
    .filter((p) => !wanted.has(p));
  if (opts.check !== true) {
    for (const f of changed) {
      const p = join(dir, f.path);
      mkdirSync(dirname(p), { recursive: true });
      writeFileSync(p, f.content);
    }
    for (const p of stale) rmSync(join(dir, p));
  }
  return { total: files.length, changed: changed.map((f) => f.path), stale };
}
