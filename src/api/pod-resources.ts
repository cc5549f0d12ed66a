/**
 * A pod's requests read from its Kubernetes fields (containers, initContainers with sidecars, overhead), shared
 * by the live translation (kube/cache/labels.ts) and the simulator's workload files, so that both sum them the same
 * way: kube-scheduler's (`podRequests` in core/model/pod-requests.ts). cpu in milli, memory in MiB (each
 * container rounded up, as before), nvidia.com/gpu in devices; every other resource by its name in base
 * units: bytes for ephemeral-storage and hugepages-* (rounded up, as Quantity.Value() does), a whole count for
 * extended resources (the apiserver rejects fractions of them). A request defaults to the limit, as the
 * apiserver defaults it.
 */
import { podRequests, type ContainerRequests } from '../core/model/pod-requests.ts';
import { err, ok, type Result } from '../core/result.ts';
import { quantityToNano, readQuantity, type QuantityUnit, type QuantityValue } from './quantity.ts';
import { GPU_RESOURCE } from './wire.ts';

type Quantities = Readonly<Record<string, QuantityValue>>;

export interface ContainerLike {
  readonly resources?: { readonly requests?: Quantities; readonly limits?: Quantities };
  readonly restartPolicy?: string;
}

export interface PodResourcesInput {
  readonly containers?: readonly ContainerLike[];
  readonly initContainers?: readonly ContainerLike[];
  readonly overhead?: Quantities;
}

export interface PodResources {
  readonly cpuMilli: number;
  readonly memoryMiB: number;
  readonly gpuCount: number;
  /** Other resources (> 0 only), names sorted; undefined when none. */
  readonly scalar?: Readonly<Record<string, number>>;
}

/** Units by resource name: the core's for cpu, memory and GPUs, bytes for storage-like ones, whole counts otherwise. */
function unitOf(name: string): QuantityUnit | 'bytes' {
  if (name === 'cpu') return 'milli';
  if (name === 'memory') return 'MiB';
  if (name === 'ephemeral-storage' || name.startsWith('hugepages-')) return 'bytes';
  return 'count';
}

export function readResourceQuantity(name: string, value: QuantityValue, field: string): Result<number, string> {
  const unit = unitOf(name);
  if (unit !== 'bytes') return readQuantity(value, unit, field);
  // Value() rounds a fraction of a byte up.
  const n = quantityToNano(value);
  if (n === undefined || n < 0n) return readQuantity(value, 'count', field);
  const bytes = (n + 999_999_999n) / 1_000_000_000n;
  return bytes > BigInt(Number.MAX_SAFE_INTEGER) ? err(`${field}: ${JSON.stringify(value)} is too large`) : ok(Number(bytes));
}

function containerRequests(c: ContainerLike, field: string): Result<Record<string, number>, string> {
  const out: Record<string, number> = {};
  const req = c.resources?.requests ?? {};
  const lim = c.resources?.limits ?? {};
  for (const name of new Set([...Object.keys(req), ...Object.keys(lim)])) {
    const from = req[name] !== undefined ? 'requests' : 'limits';
    const v = readResourceQuantity(name, (from === 'requests' ? req[name] : lim[name]) as QuantityValue, `${field}.resources.${from}[${name}]`);
    if (!v.ok) return v;
    out[name] = v.value;
  }
  return ok(out);
}

/** `field` prefixes error messages (e.g. `pod ns/name: spec`). */
export function readPodResources(p: PodResourcesInput, field: string): Result<PodResources, string> {
  const list = (cs: readonly ContainerLike[] | undefined, name: string): Result<ContainerRequests[], string> => {
    const out: ContainerRequests[] = [];
    for (const [i, c] of (cs ?? []).entries()) {
      const r = containerRequests(c, `${field}.${name}[${i}]`);
      if (!r.ok) return r;
      out.push(c.restartPolicy === 'Always' && name === 'initContainers' ? { requests: r.value, sidecar: true } : { requests: r.value });
    }
    return ok(out);
  };
  const containers = list(p.containers, 'containers');
  if (!containers.ok) return containers;
  const init = list(p.initContainers, 'initContainers');
  if (!init.ok) return init;
  const overhead: Record<string, number> = {};
  for (const [name, q] of Object.entries(p.overhead ?? {})) {
    const v = readResourceQuantity(name, q, `${field}.overhead[${name}]`);
    if (!v.ok) return v;
    overhead[name] = v.value;
  }
  const total = podRequests(containers.value, init.value, overhead);
  let scalar: Record<string, number> | undefined;
  for (const name of Object.keys(total).sort()) {
    if (name === 'cpu' || name === 'memory' || name === GPU_RESOURCE) continue;
    const v = total[name] as number;
    if (v > 0) (scalar ??= {})[name] = v;
  }
  if (!Number.isSafeInteger(total[GPU_RESOURCE] ?? 0)) return err(`${field}: ${GPU_RESOURCE} out of range`);
  return ok({ cpuMilli: total['cpu'] ?? 0, memoryMiB: total['memory'] ?? 0, gpuCount: total[GPU_RESOURCE] ?? 0, ...(scalar === undefined ? {} : { scalar }) });
}
