import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runSits } from '../testing/sits-cli.ts';

describe('sits run --config (several profiles, ADR 0076)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sits-run-config-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('a wrong file stops it before it connects, naming file:line:column and field; exit 2', async () => {
    const file = join(dir, 'sched.yaml');
    writeFileSync(
      file,
      'apiVersion: ai.sits2026.dev/v1\nkind: SchedulerConfiguration\nprofiles:\n  - schedulerName: a\n    profile: fastest\n  - schedulerName: a\n',
    );
    const r = await runSits(['run', '--config', file, '--kubeconfig', join(dir, 'none.yaml')]);
    expect(r.code).toBe(2);
    expect(r.err).toContain(`${file}:5:14: profiles[0].profile: unknown profile "fastest"`);
    expect(r.err).toContain(`${file}:6:20: profiles[1].schedulerName: "a" is already the name of profiles[0]`);
    const missing = await runSits(['run', '--config', join(dir, 'nope.yaml')]);
    expect(missing.code).toBe(2);
    expect(missing.err).toMatch(/--config: ENOENT/);
  });

  it('--config names the profiles: not with --profile or --scheduler-name', async () => {
    const r = await runSits(['run', '--config', join(dir, 'sched.yaml'), '--scheduler-name', 'x']);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/--config names the profiles and their scheduler names: give it without --profile and --scheduler-name/);
  });
});

describe('sits run --batch-claims-dir', () => {
  it('runs only with the controllers and needs a folder; both refused before it connects, exit 2', async () => {
    const alone = await runSits(['run', '--batch-claims-dir', tmpdir()]);
    expect(alone.code).toBe(2);
    expect(alone.err).toContain('--batch-claims-dir runs with the controllers: give --controllers too');
    const missing = await runSits(['run', '--controllers', '--batch-claims-dir', join(tmpdir(), 'no-such-claims-dir')]);
    expect(missing.code).toBe(2);
    expect(missing.err).toContain('--batch-claims-dir: ');
    expect(missing.err).toContain('is not a folder');
  });
  it("takes the batch workers' plugin limits only with it, and names a bad field; exit 2 before it connects", async () => {
    const alone = await runSits(['run', '--controllers', '--batch-plugin-limits', '{"callTimeoutMs":5000}']);
    expect(alone.code).toBe(2);
    expect(alone.err).toContain('--batch-plugin-limits is for the batch workers: give --batch-claims-dir too');
    const bad = await runSits(['run', '--controllers', '--batch-claims-dir', tmpdir(), '--batch-plugin-limits', '{"callTimeoutMs":-1}']);
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('--batch-plugin-limits: callTimeoutMs must be a positive integer, got -1');
  });
  it('takes the routing plugin folder only with the claims folder, and only a folder; exit 2 before it connects', async () => {
    const alone = await runSits(['run', '--controllers', '--batch-plugin-dir', tmpdir()]);
    expect(alone.code).toBe(2);
    expect(alone.err).toContain('--batch-plugin-dir is for the BatchInferenceJob controller: give --batch-claims-dir too');
    const missing = await runSits(['run', '--controllers', '--batch-claims-dir', tmpdir(), '--batch-plugin-dir', '/nonexistent/plugins']);
    expect(missing.code).toBe(2);
    expect(missing.err).toContain('--batch-plugin-dir: /nonexistent/plugins is not a folder');
  });
});
