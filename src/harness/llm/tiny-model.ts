/**
 * A tiny random-weight llama model and LoRA adapters for the engine tests (issue 12, item 6): no registry ships a
 * language model, so the test writes one. Deterministic by seed (same bytes every run), cached by content hash
 * outside the repository (~/.cache/sits-models, or SITS_MODEL_CACHE). The vocab is our own SentencePiece-style
 * ("llama") vocab: <unk>/<s>/</s>, the 256 byte-fallback tokens llama.cpp needs, letters and a few hundred
 * "▁word" pieces, so that a prompt of N words is about N tokens. Random weights give meaningless text but real
 * compute, real tokens and a real KV cache (docs/adr/0087).
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { writeGguf, type GgufTensor, type GgufValue } from './gguf-writer.ts';

export interface TinyModelShape {
  readonly embedding: number;
  readonly layers: number;
  readonly heads: number;
  readonly feedForward: number;
  readonly contextLength: number;
}

export const TINY_SHAPE: TinyModelShape = { embedding: 64, layers: 2, heads: 4, feedForward: 128, contextLength: 2048 };

/** The words of the vocab; also what the load generator builds prompts from (one token each). */
export const VOCAB_WORDS: readonly string[] = (
  'the of and to in is it that was for on are as with his they at be this from have or by one had not but what all were when we there can an your ' +
  'which their said if do will each about how up out them then she many some so these would other into has more her two like him see time could no ' +
  'make than first been its who now people my made over did down only way find use may water long little very after words called just where most know ' +
  'get through back much go good new write our me man too any day same right look think also around another came come work three word must because does ' +
  'part even place well such here take why things help put years different away again off went old number great tell men say small every found still ' +
  'between name should home big give air line set own under read last never us left end along while might next sound below saw something thought both ' +
  'few those always looked show large often together asked house world going want school important until form food keep children feet land side without ' +
  'boy once animals life enough took sometimes four head above kind began almost live page got earth need far hand high year mother light parts country ' +
  'father let night following picture being study second eyes soon times story boys since white days ever paper hard near sentence better best across ' +
  'during today others however sure means knew try told young miles sun ways thing whole hear example heard several change answer room sea against top ' +
  'turned learn point city play toward five using himself usually model server token cache queue scale node pod gpu replica adapter'
).split(' ');

export const UNK = 0;
export const BOS = 1;
export const EOS = 2;

interface Vocab {
  readonly tokens: string[];
  readonly scores: number[];
  readonly types: number[];
}

/** llama.cpp token types: 1 normal, 2 unknown, 3 control, 6 byte. */
function buildVocab(): Vocab {
  const tokens: string[] = ['<unk>', '<s>', '</s>'];
  const types: number[] = [2, 3, 3];
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
    types.push(6);
  }
  const pieces = new Set<string>(['▁']);
  for (const c of 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,!?\'"-:;()') pieces.add(c);
  for (const c of 'abcdefghijklmnopqrstuvwxyz0123456789') pieces.add(`▁${c}`);
  // SentencePiece only merges adjacent pieces into pieces of the vocab: every prefix of "▁word" must be one.
  for (const w of VOCAB_WORDS) for (let i = 1; i <= w.length; i++) pieces.add(`▁${w.slice(0, i)}`);
  for (const p of pieces) {
    tokens.push(p);
    types.push(1);
  }
  // SentencePiece merges toward the highest score: longer pieces score higher, so a word becomes one token.
  const scores = tokens.map((t, i) => (types[i] === 1 ? -1000 + [...t].length * 10 - i * 1e-3 : 0));
  return { tokens, scores, types };
}

/** mulberry32: a small seeded PRNG (the weights must be the same bytes on every run). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function uniform(rand: () => number, n: number, amplitude: number): Float32Array {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = (rand() * 2 - 1) * amplitude;
  return a;
}

const u32 = (value: number): GgufValue => ({ type: 'uint32', value });
const f32 = (value: number): GgufValue => ({ type: 'float32', value });
const str = (value: string): GgufValue => ({ type: 'string', value });

/** The model file's bytes: architecture llama, F32 weights uniform in ±1/√fan-in, special tokens never predicted. */
export function tinyModelGguf(seed = 1, shape: TinyModelShape = TINY_SHAPE): Buffer {
  const vocab = buildVocab();
  const nVocab = vocab.tokens.length;
  const { embedding: d, layers, heads, feedForward: ff } = shape;
  const rand = prng(seed);
  const metadata: [string, GgufValue][] = [
    ['general.architecture', str('llama')],
    ['general.name', str(`sits-tiny-llama-${seed}`)],
    ['general.file_type', u32(0)],
    ['llama.context_length', u32(shape.contextLength)],
    ['llama.embedding_length', u32(d)],
    ['llama.block_count', u32(layers)],
    ['llama.feed_forward_length', u32(ff)],
    ['llama.attention.head_count', u32(heads)],
    ['llama.attention.head_count_kv', u32(heads)],
    ['llama.attention.layer_norm_rms_epsilon', f32(1e-5)],
    ['llama.rope.dimension_count', u32(d / heads)],
    ['llama.rope.freq_base', f32(10000)],
    ['llama.vocab_size', u32(nVocab)],
    ['tokenizer.ggml.model', str('llama')],
    ['tokenizer.ggml.tokens', { type: 'array', itemType: 'string', value: vocab.tokens }],
    ['tokenizer.ggml.scores', { type: 'array', itemType: 'float32', value: vocab.scores }],
    ['tokenizer.ggml.token_type', { type: 'array', itemType: 'int32', value: vocab.types }],
    ['tokenizer.ggml.unknown_token_id', u32(UNK)],
    ['tokenizer.ggml.bos_token_id', u32(BOS)],
    ['tokenizer.ggml.eos_token_id', u32(EOS)],
    ['tokenizer.ggml.add_bos_token', { type: 'bool', value: true }],
    ['tokenizer.ggml.add_eos_token', { type: 'bool', value: false }],
  ];
  const ones = (n: number): Float32Array => new Float32Array(n).fill(1);
  const matrix = (nIn: number, nOut: number): Float32Array => uniform(rand, nIn * nOut, 1 / Math.sqrt(nIn));
  const tensors: GgufTensor[] = [{ name: 'token_embd.weight', dims: [d, nVocab], data: uniform(rand, d * nVocab, 1) }];
  for (let l = 0; l < layers; l++) {
    tensors.push(
      { name: `blk.${l}.attn_norm.weight`, dims: [d], data: ones(d) },
      { name: `blk.${l}.attn_q.weight`, dims: [d, d], data: matrix(d, d) },
      { name: `blk.${l}.attn_k.weight`, dims: [d, d], data: matrix(d, d) },
      { name: `blk.${l}.attn_v.weight`, dims: [d, d], data: matrix(d, d) },
      { name: `blk.${l}.attn_output.weight`, dims: [d, d], data: matrix(d, d) },
      { name: `blk.${l}.ffn_norm.weight`, dims: [d], data: ones(d) },
      { name: `blk.${l}.ffn_gate.weight`, dims: [d, ff], data: matrix(d, ff) },
      { name: `blk.${l}.ffn_up.weight`, dims: [d, ff], data: matrix(d, ff) },
      { name: `blk.${l}.ffn_down.weight`, dims: [ff, d], data: matrix(ff, d) },
    );
  }
  // The output rows of <unk>, <s>, </s> and the byte tokens are zero (logit 0 among ±several): generation runs
  // to max_tokens and the text is words.
  const output = uniform(rand, d * nVocab, 4 / Math.sqrt(d));
  for (let id = 0; id < nVocab; id++) if (vocab.types[id] !== 1) output.fill(0, id * d, (id + 1) * d);
  tensors.push({ name: 'output_norm.weight', dims: [d], data: ones(d) }, { name: 'output.weight', dims: [d, nVocab], data: output });
  return writeGguf(metadata, tensors);
}

/**
 * A LoRA adapter for the tiny model (llama.cpp's GGUF adapter format: general.type=adapter, adapter.type=lora,
 * adapter.lora.alpha, blk.N.<tensor>.weight.lora_a [n_in, r] and .lora_b [r, n_out]). It adapts the attention
 * value and output projections and the FFN down projection strongly enough to change greedy output.
 */
export function tinyLoraGguf(seed = 7, rank = 4, shape: TinyModelShape = TINY_SHAPE): Buffer {
  const rand = prng(seed);
  const { embedding: d, layers, feedForward: ff } = shape;
  const metadata: [string, GgufValue][] = [
    ['general.architecture', str('llama')],
    ['general.type', str('adapter')],
    ['general.name', str(`sits-tiny-lora-${seed}`)],
    ['adapter.type', str('lora')],
    ['adapter.lora.alpha', f32(rank)],
  ];
  const tensors: GgufTensor[] = [];
  for (let l = 0; l < layers; l++) {
    for (const [t, nIn, nOut] of [
      ['attn_v', d, d],
      ['attn_output', d, d],
      ['ffn_down', ff, d],
    ] as const) {
      tensors.push({ name: `blk.${l}.${t}.weight.lora_a`, dims: [nIn, rank], data: uniform(rand, nIn * rank, 1 / Math.sqrt(nIn)) });
      tensors.push({ name: `blk.${l}.${t}.weight.lora_b`, dims: [rank, nOut], data: uniform(rand, rank * nOut, 1) });
    }
  }
  return writeGguf(metadata, tensors);
}

/** Where generated models are cached: SITS_MODEL_CACHE, else ~/.cache/sits-models. */
export function modelCacheDir(): string {
  return process.env.SITS_MODEL_CACHE ?? join(homedir(), '.cache', 'sits-models');
}

/** Writes `bytes` under the cache by content hash (atomically: temp file, then rename) and returns the path. */
export function cacheGguf(prefix: string, bytes: Buffer, dir = modelCacheDir()): string {
  const hash = createHash('sha256').update(bytes).digest('hex').slice(0, 16);
  const path = join(dir, `${prefix}-${hash}.gguf`);
  if (existsSync(path)) return path;
  mkdirSync(dir, { recursive: true });
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, bytes);
  renameSync(tmp, path);
  return path;
}

/** The tiny model and one adapter on disk (generated once, then reused). */
export function ensureTinyModel(o: { modelSeed?: number; loraSeed?: number; dir?: string } = {}): { model: string; lora: string } {
  return { model: cacheGguf('tiny-llama', tinyModelGguf(o.modelSeed ?? 1), o.dir), lora: cacheGguf('tiny-lora', tinyLoraGguf(o.loraSeed ?? 7), o.dir) };
}
