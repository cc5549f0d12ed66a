// The output commit protocol on a real file system, and the streaming reader of OpenAI batch input.
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BatchCoordinator, MANIFEST, OUTPUT, type Assignment } from '../../controllers/batch-inference/coordinator.ts';
import { DEFAULT_LADDER } from '../../controllers/batch-inference/fault-ladder.ts';
import { DEFAULT_LONG_TAIL } from '../../controllers/batch-inference/long-tail.ts';
import { writePart } from '../../controllers/batch-inference/part-writer.ts';
import { MemoryQuarantine } from '../../controllers/batch-inference/quarantine.ts';
import { FsOutputStore, readBatchInput } from './batch-files.ts';

const tmp = mkdtempSync(join(tmpdir(), 'sits-batch-files-'));
const line = (id: string) =>
  JSON.stringify({
    custom_id: id,
    method: 'POST',
    url: '/v1/chat/completions',
    body: { model: 'm', messages: [{ role: 'user', content: `say ${id}` }], max_tokens: 8 },
  });

describe('readBatchInput', () => {
  it('streams a valid file into records', async () => {
    const f = join(tmp, 'ok.jsonl');
    writeFileSync(f, `${Array.from({ length: 50 }, (_, i) => line(`r${i}`)).join('\n')}\n`);
    const r = await readBatchInput(f);
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.records.map((x) => x.customId)).toEqual(Array.from({ length: 50 }, (_, i) => `r${i}`));
  });
  it('names file:line:column of a malformed line, and the field of a wrong one', async () => {
    const f = join(tmp, 'bad.jsonl');
    writeFileSync(f, [line('a'), '{"custom_id":"b","method":"POST",', line('c').replace('"POST"', '"PUT"')].join('\r\n'));
    const r = await readBatchInput(f);
    expect(r).toEqual({
      ok: false,
      errors: [
        expect.stringMatching(new RegExp(`^${f.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:2:\\d+: not JSON`)),
        expect.stringContaining(`${f}:3:1: method: `),
      ],
    });
  });
  it('says when the file is not there', async () => {
    expect(await readBatchInput(join(tmp, 'nope.jsonl'))).toEqual({ ok: false, errors: [`${join(tmp, 'nope.jsonl')}: no such file`] });
  });
});

describe('FsOutputStore with the coordinator', () => {
  it('commits by rename + manifest, resumes after a crash without the uncommitted part, writes a complete output', async () => {
    const input = join(tmp, 'in.jsonl');
    writeFileSync(input, `${Array.from({ length: 20 }, (_, i) => line(`r${i}`)).join('\n')}\n`);
    const r = await readBatchInput(input);
    if (!r.ok) throw new Error(r.errors.join('\n'));
    const dir = join(tmp, 'out');
    const store = new FsOutputStore(dir);
    const cfg = {
      jobUid: 'uid-1',
      records: r.records,
      shardRecords: 5,
      ladder: DEFAULT_LADDER,
      longTail: DEFAULT_LONG_TAIL,
      quarantine: new MemoryQuarantine(),
    };
    const w = { id: 'w0', device: 'n0/0', cpu: false };
    const c1 = BatchCoordinator.open(store, cfg, 0);
    const a = c1.assign(w, 0) as Assignment;
    writePart(store, cfg.jobUid, cfg.records, a);
    c1.complete(a.attemptId, 1);
    const b = c1.assign(w, 1) as Assignment;
    writePart(store, cfg.jobUid, cfg.records, b); // the coordinator dies before committing b
    writeFileSync(join(dir, 'parts', 'x.jsonl.tmp-1-1'), 'half a line'); // and a writer died mid-write
    expect(existsSync(join(dir, b.part))).toBe(true);
    const c2 = BatchCoordinator.open(new FsOutputStore(dir), cfg, 2);
    expect(existsSync(join(dir, b.part))).toBe(false);
    expect(store.list().filter((f) => f.includes('.tmp-'))).toEqual([]);
    for (let x = c2.assign(w, 3); x !== undefined; x = c2.assign(w, 3)) {
      writePart(store, cfg.jobUid, cfg.records, x);
      c2.complete(x.attemptId, 4);
    }
    expect(c2.finish().state).toBe('complete');
    const out = readFileSync(join(dir, OUTPUT), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { custom_id: string });
    expect(out.map((o) => o.custom_id)).toEqual(r.records.map((x) => x.customId));
    expect(JSON.parse(readFileSync(join(dir, MANIFEST), 'utf8'))).toMatchObject({ state: 'complete', epoch: 2, total: 20 });
  });
});
