import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { makeScratchDir, sweepStaleScratch } from './scratch-dirs.ts';

let parent = '';
afterEach(() => rmSync(parent, { recursive: true, force: true }));

describe('scratch folders a SIGKILL left behind', () => {
  it("are removed at the next start when their owner is gone; live owners', unowned and other prefixes' stay", () => {
    parent = mkdtempSync(join(tmpdir(), 'sits-scratch-test-'));
    const mine = makeScratchDir('sits-dev-', parent);
    // A process that has exited: its pid is free (a reused pid would only keep a folder, never remove a live one).
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    const stale = join(parent, 'sits-dev-stale');
    mkdirSync(stale);
    writeFileSync(join(stale, 'owner.pid'), `${dead.stdout}\n`);
    writeFileSync(join(stale, 'etcd.log'), 'x');
    const unowned = join(parent, 'sits-dev-old');
    mkdirSync(unowned);
    const other = join(parent, 'sits-cp-stale');
    mkdirSync(other);
    writeFileSync(join(other, 'owner.pid'), `${dead.stdout}\n`);

    expect(sweepStaleScratch('sits-dev-', parent)).toEqual([stale]);
    expect([existsSync(stale), existsSync(mine), existsSync(unowned), existsSync(other)]).toEqual([false, true, true, true]);
    expect(sweepStaleScratch('sits-cp-', parent)).toEqual([other]);
  });
});
