/**
 * Scratch folders of the local clusters (`sits dev up`, the e2e control planes) that a SIGKILL cannot leave behind
 * for good: each records the process that made it (`owner.pid`), and the next start removes the folders of the
 * same prefix whose owner is gone. A folder without the file (made by an older SITS, or still being made) is kept.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const OWNER_FILE = 'owner.pid';

/** `mkdtemp` under the temp folder, with this process recorded as its owner. */
export function makeScratchDir(prefix: string, parent: string = tmpdir()): string {
  const dir = mkdtempSync(join(parent, prefix));
  writeFileSync(join(dir, OWNER_FILE), `${process.pid}\n`);
  return dir;
}

/** Whether a process with this pid exists (EPERM: it does, another user's). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Removes the `prefix*` folders under `parent` whose recorded owner no longer runs; returns their paths. */
export function sweepStaleScratch(prefix: string, parent: string = tmpdir()): string[] {
  const removed: string[] = [];
  let names: string[];
  try {
    names = readdirSync(parent).filter((n) => n.startsWith(prefix));
  } catch {
    return removed;
  }
  for (const n of names) {
    const dir = join(parent, n);
    let pid: number;
    try {
      pid = Number.parseInt(readFileSync(join(dir, OWNER_FILE), 'utf8'), 10);
    } catch {
      continue;
    }
    if (!Number.isInteger(pid) || pid <= 0 || pid === process.pid || alive(pid)) continue;
    rmSync(dir, { recursive: true, force: true });
    removed.push(dir);
  }
  return removed;
}
