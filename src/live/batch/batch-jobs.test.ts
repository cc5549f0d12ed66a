// Attack tests of issue 36, finding 1, on real folders through the controller's real code paths (fsBatchJobs and
// reconcileBatchJob): a job reaches only files inside its own namespace's claim, and never writes or deletes an output
// another job owns. Each fails if the hole reopens (a lexical-only check, a claim folder without the namespace, a
// manifest written without reading its owner).
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { withDefaults } from '../../api/validate.ts';
import { reconcileBatchJob, type SessionState } from '../../controllers/batch-inference/controller.ts';
import type { BatchJobObject } from '../../controllers/batch-inference/pods.ts';
import { claimsUnder, fsBatchJobs, resolveInClaim } from './batch-jobs.ts';

let root: string;
let claims: string;
let secret: string;
const line = (id: string): string =>
  JSON.stringify({ custom_id: id, method: 'POST', url: '/v1/chat/completions', body: { messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 } });

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'sits-claims-'));
  claims = join(root, 'claims');
  // Outside every claim: what the controller's own pod holds (its service-account token).
  secret = join(root, 'token');
  writeFileSync(secret, `${line('stolen')}\n`);
  for (const ns of ['alice', 'bob']) mkdirSync(join(claims, ns, 'data', 'in'), { recursive: true });
  writeFileSync(join(claims, 'alice', 'data', 'in', 'private.jsonl'), `${line('alice-secret')}\n`);
  writeFileSync(join(claims, 'bob', 'data', 'in', 'ok.jsonl'), `${line('b')}\n`);
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const job = (ns: string, uid: string, input: string, output: string): BatchJobObject =>
  withDefaults('BatchInferenceJob', {
    apiVersion: 'ai.sits2026.dev/v1',
    kind: 'BatchInferenceJob',
    metadata: { name: 'j', namespace: ns, uid },
    spec: { runtime: 'llamacpp', model: { uri: 'pvc://m/x.gguf' }, input: { uri: input }, output: { uri: output } },
  }) as BatchJobObject;

/** The port's answer once the background open settled. */
async function settle(j: BatchJobObject): Promise<SessionState> {
  const port = fsBatchJobs(claimsUnder(claims));
  for (let i = 0; i < 200; i++) {
    const s = port.session(j, 0);
    if (s.state !== 'loading') return s;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error('the session never opened');
}

describe('a batch job stays in its own claim (issue 36)', () => {
  it('a symlink in the claim pointing out is refused, and the job fails saying so', async () => {
    symlinkSync(secret, join(claims, 'bob', 'data', 'in', 'link.jsonl'));
    symlinkSync(root, join(claims, 'bob', 'data', 'up'));
    for (const uri of ['pvc://data/in/link.jsonl', 'pvc://data/up/token']) {
      const j = job('bob', 'u1', uri, 'pvc://data/out/j');
      const s = await settle(j);
      expect(s).toMatchObject({ state: 'refused', reason: 'PathOutsideClaim' });
      const step = reconcileBatchJob(j, [], 1, { jobs: { session: () => s } });
      expect(step.status?.phase).toBe('Failed');
      expect(step.status?.conditions?.find((c) => c.type === 'Complete')).toMatchObject({ status: 'False', reason: 'PathOutsideClaim' });
    }
    // An output folder through a link out is refused before anything is written there.
    symlinkSync(join(root), join(claims, 'bob', 'data', 'outlink'));
    expect(await settle(job('bob', 'u1', 'pvc://data/in/ok.jsonl', 'pvc://data/outlink/x'))).toMatchObject({ state: 'refused', reason: 'PathOutsideClaim' });
    expect(existsSync(join(root, 'x'))).toBe(false);
    // A dangling link is refused too (it would be followed when written).
    symlinkSync(join(root, 'nowhere'), join(claims, 'bob', 'data', 'dangling'));
    expect(await settle(job('bob', 'u1', 'pvc://data/in/ok.jsonl', 'pvc://data/dangling'))).toMatchObject({ state: 'refused', reason: 'PathOutsideClaim' });
  });

  it.each(['pvc://data/../../../token', 'pvc://data//etc/passwd', 'pvc://data/%2e%2e/%2e%2e/token', 'pvc://data/..\\..\\token', 'pvc://data/in\0x'])(
    'the traversal %j never reads outside the claim (port and controller)',
    async (uri) => {
      const j = job('bob', 'u1', uri, 'pvc://data/out/j');
      expect(resolveInClaim(claimsUnder(claims), 'bob', uri)).toMatchObject({ ok: false, reason: 'PathOutsideClaim' });
      expect(await settle(j)).toMatchObject({ state: 'refused', reason: 'PathOutsideClaim' });
      // The controller refuses the spec before it opens anything.
      const step = reconcileBatchJob(j, [], 1, {
        jobs: {
          session: () => {
            throw new Error('opened a refused URI');
          },
        },
      });
      expect(step.status?.phase).toBe('Failed');
      expect(step.status?.conditions?.find((c) => c.type === 'Complete')?.message).toContain('spec.input.uri');
    },
  );

  it("a second namespace's claim of the same name is another folder: bob's job cannot read alice's input", async () => {
    expect(resolveInClaim(claimsUnder(claims), 'alice', 'pvc://data/in/private.jsonl')).toEqual({
      ok: true,
      path: join(claims, 'alice', 'data', 'in', 'private.jsonl'),
    });
    const s = await settle(job('bob', 'u2', 'pvc://data/in/private.jsonl', 'pvc://data/out/steal'));
    // bob's claim has no such file: the input is unreadable in bob's folder, never alice's.
    expect(s.state).toBe('rejected');
    expect(JSON.stringify(s)).not.toContain('alice-secret');
    expect(existsSync(join(claims, 'alice', 'data', 'out'))).toBe(false);
    expect(existsSync(join(claims, 'bob', 'data', 'out', 'steal', 'manifest.json'))).toBe(true);
  });

  it('an output owned by another job UID is left intact: no manifest overwrite, no part deleted, the job fails naming the owner', async () => {
    const out = join(claims, 'bob', 'data', 'out', 'theirs');
    mkdirSync(join(out, 'parts'), { recursive: true });
    const manifest = `${JSON.stringify({ version: 1, jobUid: 'owner-uid', total: 1, epoch: 1, state: 'running', parts: [], missing: [] })}\n`;
    writeFileSync(join(out, 'manifest.json'), manifest);
    writeFileSync(join(out, 'parts', 'unlisted.jsonl'), 'their work\n');
    // Both the valid-input path (coordinator open) and the rejected-input path (which writes a partial manifest).
    writeFileSync(join(claims, 'bob', 'data', 'in', 'bad.jsonl'), '{not json\n');
    for (const input of ['pvc://data/in/ok.jsonl', 'pvc://data/in/bad.jsonl']) {
      const j = job('bob', 'intruder-uid', input, 'pvc://data/out/theirs');
      const s = await settle(j);
      expect(s).toMatchObject({ state: 'refused', reason: 'OutputOwnedByAnotherJob' });
      if (s.state === 'refused') expect(s.message).toContain('owner-uid');
      const step = reconcileBatchJob(j, [], 1, { jobs: { session: () => s } });
      expect(step.status?.phase).toBe('Failed');
      expect(step.status?.conditions?.find((c) => c.type === 'Complete')).toMatchObject({ reason: 'OutputOwnedByAnotherJob' });
      expect(readFileSync(join(out, 'manifest.json'), 'utf8')).toBe(manifest);
      expect(readFileSync(join(out, 'parts', 'unlisted.jsonl'), 'utf8')).toBe('their work\n');
    }
  });

  it('parts without a manifest are not deleted; the owner of a manifest resumes as before', async () => {
    const out = join(claims, 'bob', 'data', 'out', 'stray');
    mkdirSync(join(out, 'parts'), { recursive: true });
    writeFileSync(join(out, 'parts', 'x.jsonl'), 'someone\n');
    expect(await settle(job('bob', 'u3', 'pvc://data/in/ok.jsonl', 'pvc://data/out/stray'))).toMatchObject({
      state: 'refused',
      reason: 'OutputOwnedByAnotherJob',
    });
    expect(existsSync(join(out, 'parts', 'x.jsonl'))).toBe(true);
    // The job's own output: opened, and opened again by the same UID (a restart).
    expect((await settle(job('bob', 'u4', 'pvc://data/in/ok.jsonl', 'pvc://data/out/mine'))).state).toBe('ready');
    expect((await settle(job('bob', 'u4', 'pvc://data/in/ok.jsonl', 'pvc://data/out/mine'))).state).toBe('ready');
  });
});
