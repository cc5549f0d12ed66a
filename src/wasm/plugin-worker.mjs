/* global WebAssembly */
// The thread a WASM strategy plugin runs in (ADR 0117). Plain JS so that it starts the same under vitest, tsx and
// node. It instantiates the module with only the host's imports, then answers calls posted on its port; after
// posting each answer it flips the shared flag so that the parent, blocked in Atomics.wait, wakes up.
import { workerData } from 'node:worker_threads';

const { bytes, flag, port, maxMemoryPages, memoryInitial } = workerData;
const ready = new Int32Array(flag);

function answer(msg) {
  port.postMessage(msg);
  Atomics.store(ready, 0, 1);
  Atomics.notify(ready, 0);
}

class PluginAbort extends Error {}

let memory;
// AssemblyScript strings: UTF-16 code units, the byte length in the 4 bytes before the pointer.
function readString(ptr) {
  try {
    if (memory === undefined || ptr === 0) return '';
    const len = new Uint32Array(memory.buffer, ptr - 4, 1)[0];
    if (len > 4096) return '';
    return String.fromCharCode(...new Uint16Array(memory.buffer, ptr, len >>> 1));
  } catch {
    return '';
  }
}

const env = {
  abort(msg, file, line, column) {
    const m = readString(msg);
    const f = readString(file);
    throw new PluginAbort(`abort${m === '' ? '' : `: ${m}`}${f === '' ? '' : ` at ${f}:${line}:${column}`}`);
  },
};
// An imported memory is the host's, with the cap as its maximum: memory.grow past it returns -1 in the module.
if (memoryInitial !== undefined) env.memory = new WebAssembly.Memory({ initial: memoryInitial, maximum: maxMemoryPages });

let exports;
try {
  const { instance } = await WebAssembly.instantiate(bytes, { env });
  exports = instance.exports;
  memory = env.memory ?? Object.values(exports).find((x) => x instanceof WebAssembly.Memory);
  const arity = {};
  for (const [name, v] of Object.entries(exports)) if (typeof v === 'function') arity[name] = v.length;
  answer({ ok: true, arity });
} catch (e) {
  answer({ ok: false, reason: `instantiation failed: ${e instanceof Error ? e.message : String(e)}` });
}

port.on('message', ({ name, args }) => {
  try {
    const f = exports?.[name];
    if (typeof f !== 'function') return answer({ ok: false, reason: `no exported function ${name}` });
    const value = f(...args);
    if (memory !== undefined && memory.buffer.byteLength > maxMemoryPages * 65536) return answer({ ok: false, reason: `memory grew to ${memory.buffer.byteLength / 65536} pages, over the cap of ${maxMemoryPages}` });
    answer(typeof value === 'number' ? { ok: true, value } : { ok: false, reason: `${name} returned ${typeof value}, not a number` });
  } catch (e) {
    const kind = e instanceof PluginAbort ? '' : e instanceof WebAssembly.RuntimeError ? 'trap: ' : 'error: ';
    answer({ ok: false, reason: `${name} failed (${kind}${e instanceof Error ? e.message : String(e)})` });
  }
});
