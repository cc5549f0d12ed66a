import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * A `node` on PATH older than 24 (this machine's system Node 20), outside node_modules: under it bin/sits.mjs runs as
 * a wrapper around the project's Node 24 (ADR 0171). Undefined when there is none.
 */
export function olderNode(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const node = join(dir, 'node');
    if (dir.includes('node_modules') || !existsSync(node)) continue;
    const v = spawnSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8' }).stdout.trim();
    if (Number(v.split('.')[0]) < 24) return node;
  }
  return undefined;
}
