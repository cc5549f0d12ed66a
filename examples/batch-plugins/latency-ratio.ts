// An example SITS strategy plugin in AssemblyScript (ABI 1, see src/controllers/batch-inference/wasm-plugin.ts).
// Compile: npx asc examples/batch-plugins/latency-ratio.ts --outFile latency-ratio.wasm --runtime stub --maximumMemory 1 -O3
// Run:     sits bench batch --batch-plugin latency-ratio.wasm
//
// Batch size: start from the memory bound at the *median* prompt (the built-in holds the p90 and then shrinks to
// the engine model's SLA prediction), then steer by the latency ratio: next = current × SLA / observed p99,
// clamped to [0.5, 1.25] per window (a proportional controller instead of the built-in AIMD).
// Routing: as the built-in, except that bronze jobs never take whole GPUs: they always fill fragments.

export function sits_abi_version(): i32 {
  return 1;
}

function clamp(v: i32, lo: i32, hi: i32): i32 {
  return v < lo ? lo : v > hi ? hi : v;
}

export function batch_size(
  current: i32,
  min: i32,
  max: i32,
  kvCapacityTokens: f64,
  promptP50: f64,
  promptP90: f64,
  outputP90: f64,
  kvHitRate: f64,
  observedP99Ms: f64,
  slaP99Ms: f64,
  memoryFraction: f64,
): i32 {
  if (current == 0) {
    const perSeq = Math.max(1.0, promptP50 * (1.0 - kvHitRate) + outputP90);
    return clamp(<i32>Math.floor(kvCapacityTokens / perSeq), min, max);
  }
  // The engine is about to preempt sequences: back off whatever the latency says.
  if (memoryFraction > 0.98) return clamp(<i32>Math.floor(<f64>current * 0.8), min, max);
  const ratio = Math.min(1.25, Math.max(0.5, slaP99Ms / Math.max(1.0, observedP99Ms)));
  return clamp(<i32>Math.floor(<f64>current * ratio), min, max);
}

// Route codes: low byte 0 gpu-exclusive, 1 gpu-shared, 2 gpu-fragments, 3 cpu-elastic; next byte quantisation
// 0 none, 1 fp8, 2 int8.
export function route(accuracyTolerance: f64, slaClass: i32, tier: i32, fragmentation: f64, outputTokensPerRecord: f64): i32 {
  const quant: i32 = accuracyTolerance >= 1.0 ? 0 : accuracyTolerance >= 0.95 ? 1 : 2;
  if (slaClass <= 1) return 0 | (quant << 8);
  if (tier == 2) return 2 | (quant << 8);
  const short = outputTokensPerRecord < 0.0 || outputTokensPerRecord <= 64.0;
  if (fragmentation >= 0.6 && accuracyTolerance < 0.85 && short) return 3 | (2 << 8);
  if (fragmentation >= 0.3) return 2 | (quant << 8);
  return 1 | (quant << 8);
}
