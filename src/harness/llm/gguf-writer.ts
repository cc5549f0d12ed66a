/**
 * A GGUF v3 writer (ggml's docs/gguf.md), just enough for the tiny test models: typed key-value metadata and F32
 * tensors. Why our own: no npm package writes GGUF (@huggingface/gguf and node-llama-cpp only read it), and the
 * format is a header, the metadata, the tensor table and the aligned tensor data. Little-endian throughout.
 */

/** Metadata value types, with GGUF's numeric codes. */
const TYPE = {
  uint8: 0,
  int8: 1,
  uint16: 2,
  int16: 3,
  uint32: 4,
  int32: 5,
  float32: 6,
  bool: 7,
  string: 8,
  array: 9,
  uint64: 10,
  int64: 11,
  float64: 12,
} as const;

export type GgufScalarType = 'uint32' | 'int32' | 'float32' | 'bool' | 'string';

export type GgufValue =
  | { readonly type: 'uint32' | 'int32' | 'float32'; readonly value: number }
  | { readonly type: 'bool'; readonly value: boolean }
  | { readonly type: 'string'; readonly value: string }
  | { readonly type: 'array'; readonly itemType: 'string'; readonly value: readonly string[] }
  | { readonly type: 'array'; readonly itemType: 'uint32' | 'int32' | 'float32'; readonly value: readonly number[] };

export interface GgufTensor {
  readonly name: string;
  /** ggml's order: dims[0] is the fastest-varying (a matrix W of n_out×n_in has dims [n_in, n_out]). */
  readonly dims: readonly number[];
  readonly data: Float32Array;
}

const GGML_TYPE_F32 = 0;
const MAGIC = 0x46554747; // "GGUF" read as a little-endian uint32

/** A growable little-endian byte sink. */
class Sink {
  private buf = Buffer.alloc(1 << 16);
  length = 0;
  private room(n: number): void {
    if (this.length + n <= this.buf.length) return;
    const next = Buffer.alloc(Math.max(this.buf.length * 2, this.length + n));
    this.buf.copy(next, 0, 0, this.length);
    this.buf = next;
  }
  u8(v: number): void {
    this.room(1);
    this.buf.writeUInt8(v, this.length);
    this.length += 1;
  }
  u32(v: number): void {
    this.room(4);
    this.buf.writeUInt32LE(v, this.length);
    this.length += 4;
  }
  i32(v: number): void {
    this.room(4);
    this.buf.writeInt32LE(v, this.length);
    this.length += 4;
  }
  f32(v: number): void {
    this.room(4);
    this.buf.writeFloatLE(v, this.length);
    this.length += 4;
  }
  u64(v: number | bigint): void {
    this.room(8);
    this.buf.writeBigUInt64LE(BigInt(v), this.length);
    this.length += 8;
  }
  str(s: string): void {
    const b = Buffer.from(s, 'utf8');
    this.u64(b.length);
    this.bytes(b);
  }
  bytes(b: Uint8Array): void {
    this.room(b.length);
    this.buf.set(b, this.length);
    this.length += b.length;
  }
  pad(alignment: number): void {
    while (this.length % alignment !== 0) this.u8(0);
  }
  done(): Buffer {
    return this.buf.subarray(0, this.length);
  }
}

function scalar(out: Sink, type: 'uint32' | 'int32' | 'float32' | 'string' | 'bool', v: number | string | boolean): void {
  if (type === 'uint32') out.u32(v as number);
  else if (type === 'int32') out.i32(v as number);
  else if (type === 'float32') out.f32(v as number);
  else if (type === 'bool') out.u8(v === true ? 1 : 0);
  else out.str(v as string);
}

/** Serializes the metadata and tensors into one GGUF v3 file. Throws on a tensor whose data does not fit its dims. */
export function writeGguf(metadata: readonly (readonly [string, GgufValue])[], tensors: readonly GgufTensor[], alignment = 32): Buffer {
  const out = new Sink();
  out.u32(MAGIC);
  out.u32(3);
  out.u64(tensors.length);
  const kv = alignment === 32 ? metadata : [...metadata, ['general.alignment', { type: 'uint32', value: alignment }] as const];
  out.u64(kv.length);
  for (const [key, v] of kv) {
    out.str(key);
    out.u32(TYPE[v.type]);
    if (v.type === 'array') {
      out.u32(TYPE[v.itemType]);
      out.u64(v.value.length);
      for (const x of v.value) scalar(out, v.itemType, x);
    } else scalar(out, v.type, v.value);
  }
  // Tensor table: offsets are relative to the start of the (aligned) data section, each tensor aligned.
  let offset = 0;
  const offsets: number[] = [];
  for (const t of tensors) {
    const n = t.dims.reduce((a, d) => a * d, 1);
    if (n !== t.data.length) throw new Error(`gguf tensor ${t.name}: dims [${t.dims.join(', ')}] hold ${n} values, data has ${t.data.length}`);
    offsets.push(offset);
    offset += Math.ceil((n * 4) / alignment) * alignment;
    out.str(t.name);
    out.u32(t.dims.length);
    for (const d of t.dims) out.u64(d);
    out.u32(GGML_TYPE_F32);
    out.u64(offsets[offsets.length - 1] as number);
  }
  out.pad(alignment);
  for (const t of tensors) {
    out.bytes(new Uint8Array(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    out.pad(alignment);
  }
  return out.done();
}
