import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { writeFakeNvidiaSmi } from '../node/testing/fake-nvidia-smi.ts';
import { runSits } from '../testing/sits-cli.ts';

const tmp = mkdtempSync(join(tmpdir(), 'sits-node-agent-'));
const testdata = (f: string): string => fileURLToPath(new URL(`../node/testdata/${f}`, import.meta.url));

/** A stand-in nvidia-smi printing a captured T4 node (see src/node/testdata/README.md). */
const smi = (): string =>
  writeFakeNvidiaSmi(join(tmp, 'smi'), readFileSync(testdata('topo-1x-tesla-p4-numa-na.txt'), 'utf8'), readFileSync(testdata('smi-q-x-tesla-t4.xml'), 'utf8'));

describe('sits node-agent', () => {
  it('--once prints the labels, annotations and devices it would write, without an API server', async () => {
    const r = await runSits(['node-agent', '--once', '--nvidia-smi', smi(), '--sysfs-root', tmp]);
    expect(r.code).toBe(0);
    const j = JSON.parse(r.out) as { labels: Record<string, string>; gpus: { uuid: string }[] };
    expect(j.labels['ai.sits2026.dev/gpu-model']).toBe('T4');
    expect(j.gpus.map((g) => g.uuid)).toEqual(['GPU-d37e67a5-91dd-3774-a5cb-99096249601a']);
  });

  it('a missing nvidia-smi or node name is a clear error with exit code 2', async () => {
    const missing = await runSits(['node-agent', '--once', '--nvidia-smi', join(tmp, 'nope')]);
    expect(missing.code).toBe(2);
    expect(missing.err).toMatch(/nope not found/);
    const noNode = await runSits(['node-agent', '--node-name', '']);
    expect(noNode.code).toBe(2);
    expect(noNode.err).toMatch(/pass --node-name or set NODE_NAME/);
  });
});
