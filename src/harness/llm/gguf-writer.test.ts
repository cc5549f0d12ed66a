import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readGgufFileInfo } from 'node-llama-cpp';
import { afterAll, describe, expect, it } from 'vitest';
import { writeGguf } from './gguf-writer.ts';
import { cacheGguf, TINY_SHAPE, tinyLoraGguf, tinyModelGguf, VOCAB_WORDS } from './tiny-model.ts';

const dir = mkdtempSync(join(tmpdir(), 'sits-gguf-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const file = (name: string, b: Buffer): string => {
  const p = join(dir, name);
  writeFileSync(p, b);
  return p;
};

describe('writeGguf', () => {
  it('writes metadata of every type and aligned F32 tensors that a GGUF reader reads back', async () => {
    const data = new Float32Array([1, 2, 3, 4, 5, 6]);
    const b = writeGguf(
      [
        ['general.architecture', { type: 'string', value: 'llama' }],
        ['t.u32', { type: 'uint32', value: 7 }],
        ['t.i32', { type: 'int32', value: -3 }],
        ['t.f32', { type: 'float32', value: 0.5 }],
        ['t.bool', { type: 'bool', value: true }],
        ['t.strs', { type: 'array', itemType: 'string', value: ['a', 'bé'] }],
        ['t.ints', { type: 'array', itemType: 'int32', value: [1, -2] }],
      ],
      [
        { name: 'a', dims: [3], data: new Float32Array([9, 8, 7]) },
        { name: 'b', dims: [3, 2], data },
      ],
    );
    const info = await readGgufFileInfo(file('kv.gguf', b));
    const md = info.metadata as unknown as Record<string, Record<string, unknown>>;
    expect(info.version).toBe(3);
    expect(md.general?.architecture).toBe('llama');
    expect(md.t).toEqual({ u32: 7, i32: -3, f32: 0.5, bool: true, strs: ['a', 'bé'], ints: [1, -2] });
    const tensors = info.fullTensorInfo ?? info.tensorInfo ?? [];
    expect(tensors.map((t) => [t.name, t.dimensions.map(Number), Number(t.offset)])).toEqual([
      ['a', [3], 0],
      ['b', [3, 2], 32],
    ]);
    // The data section starts aligned; tensor b's six floats are at its offset.
    const start = b.length - 64;
    expect(start % 32).toBe(0);
    expect([...new Float32Array(b.buffer.slice(b.byteOffset + start + 32, b.byteOffset + start + 56))]).toEqual([...data]);
  });

  it('refuses a tensor whose data does not match its dims', () => {
    expect(() => writeGguf([], [{ name: 'x', dims: [2, 2], data: new Float32Array(3) }])).toThrow(/gguf tensor x: dims \[2, 2\] hold 4 values, data has 3/);
  });
});

describe('the tiny model and adapter', () => {
  it('is deterministic by seed and cached by content', () => {
    const a = tinyModelGguf(1);
    expect(tinyModelGguf(1).equals(a)).toBe(true);
    expect(tinyModelGguf(2).equals(a)).toBe(false);
    const p = cacheGguf('m', a, dir);
    expect(cacheGguf('m', a, dir)).toBe(p);
    expect(readFileSync(p).equals(a)).toBe(true);
  });

  it('is a llama model with a vocab in which every word is one piece', async () => {
    const info = await readGgufFileInfo(file('model.gguf', tinyModelGguf(1)));
    const md = info.metadata as unknown as { llama: Record<string, unknown>; tokenizer: { ggml: { model: string; tokens: string[]; token_type: number[] } } };
    expect(md.llama.embedding_length).toBe(TINY_SHAPE.embedding);
    expect(md.llama.block_count).toBe(TINY_SHAPE.layers);
    expect(md.tokenizer.ggml.model).toBe('llama');
    const tokens = md.tokenizer.ggml.tokens;
    expect(tokens.slice(0, 4)).toEqual(['<unk>', '<s>', '</s>', '<0x00>']);
    for (const w of VOCAB_WORDS) expect(tokens).toContain(`▁${w}`);
    const names = (info.fullTensorInfo ?? info.tensorInfo ?? []).map((t) => t.name);
    expect(names).toContain('token_embd.weight');
    expect(names).toContain(`blk.${TINY_SHAPE.layers - 1}.ffn_down.weight`);
  });

  it('has an adapter in llama.cpp LoRA format', async () => {
    const info = await readGgufFileInfo(file('lora.gguf', tinyLoraGguf(7)));
    const md = info.metadata as unknown as { general: Record<string, unknown>; adapter: { type: string; lora: { alpha: number } } };
    expect(md.general.type).toBe('adapter');
    expect(md.adapter.type).toBe('lora');
    expect(md.adapter.lora.alpha).toBe(4);
    const t = (info.fullTensorInfo ?? info.tensorInfo ?? []).find((x) => x.name === 'blk.0.attn_v.weight.lora_a');
    expect(t?.dimensions.map(Number)).toEqual([TINY_SHAPE.embedding, 4]);
  });
});
