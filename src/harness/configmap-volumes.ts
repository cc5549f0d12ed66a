/**
 * Dev mode and tests only: what the kubelet's configMap volume plugin does for the pods the fake kubelet runs as
 * processes (fake-kubelet.ts). It reads each `configMap` volume's ConfigMap from the apiserver, projects its keys
 * (`data` as UTF-8 text, `binaryData` as bytes; all keys, or only `items` at their paths and modes; `optional`) into
 * a folder per pod laid out as the kubelet's atomic writer does (`..<timestamp>/` with the files, `..data` linking
 * to it, each top-level entry linking through `..data`), and maps every container's `volumeMounts` of it (and
 * `subPath`) to that folder for the process. Unlike the kubelet it does not refresh the files when the ConfigMap
 * changes; a pod sees the ConfigMap as it was when it started.
 */
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { V1ConfigMap, V1ConfigMapVolumeSource, V1Pod } from '@kubernetes/client-node';
import { isStatus, type KubeClient } from '../kube/client/client.ts';

export interface ProjectedFile {
  /** Relative to the volume's root. */
  readonly path: string;
  readonly bytes: Uint8Array;
  readonly mode: number;
}

export type Projection = { readonly ok: true; readonly files: readonly ProjectedFile[] } | { readonly ok: false; readonly reason: string };

/** The kubelet's default file mode of a configMap volume (0644). */
export const DEFAULT_CONFIGMAP_MODE = 0o644;

/**
 * The files of one configMap volume, from its ConfigMap (undefined: not found), with the kubelet's rules and
 * messages: a missing ConfigMap or a listed key it lacks fails the mount unless the volume is optional.
 */
export function projectConfigMap(source: V1ConfigMapVolumeSource, cm: V1ConfigMap | undefined): Projection {
  const optional = source.optional === true;
  if (cm === undefined) return optional ? { ok: true, files: [] } : { ok: false, reason: `configmap "${source.name}" not found` };
  const mode = source.defaultMode ?? DEFAULT_CONFIGMAP_MODE;
  const value = (key: string): Uint8Array | undefined => {
    const text = cm.data?.[key];
    if (text !== undefined) return new TextEncoder().encode(text);
    const b64 = cm.binaryData?.[key];
    return b64 === undefined ? undefined : new Uint8Array(Buffer.from(b64, 'base64'));
  };
  if (source.items === undefined || source.items.length === 0) {
    const keys = [...Object.keys(cm.data ?? {}), ...Object.keys(cm.binaryData ?? {})].sort();
    return { ok: true, files: keys.map((k) => ({ path: k, bytes: value(k) as Uint8Array, mode })) };
  }
  const files: ProjectedFile[] = [];
  for (const it of source.items) {
    const bytes = value(it.key);
    if (bytes === undefined) {
      if (optional) continue;
      return { ok: false, reason: `configmap references non-existent config key: ${it.key}` };
    }
    files.push({ path: it.path, bytes, mode: it.mode ?? mode });
  }
  return { ok: true, files };
}

/** Writes `files` under `dir` in the atomic writer's layout; `now` names the timestamped folder. */
export function writeVolume(dir: string, files: readonly ProjectedFile[], now: Date): void {
  rmSync(dir, { recursive: true, force: true });
  const stamp = `..${now.toISOString().replace(/[-:]/g, '_').replace('T', '_').replace('Z', '')}`;
  const data = join(dir, stamp);
  mkdirSync(data, { recursive: true });
  for (const f of files) {
    const p = join(data, f.path);
    mkdirSync(dirname(p), { recursive: true });
    writeFileSync(p, f.bytes, { mode: f.mode });
  }
  symlinkSync(stamp, join(dir, '..data'));
  for (const top of new Set(files.map((f) => f.path.split('/')[0] as string))) symlinkSync(join('..data', top), join(dir, top));
}

export type PodVolumes =
  | { readonly ok: true; readonly mounts: ReadonlyMap<string, Readonly<Record<string, string>>> }
  | { readonly ok: false; readonly volume: string; readonly reason: string };

/**
 * Materialises the pod's configMap volumes under `podDir` (reading each ConfigMap from the apiserver) and returns,
 * per container name, its mount paths mapped to folders (or, with subPath, files) on this machine.
 */
export async function materializeConfigMapVolumes(client: KubeClient, pod: V1Pod, podDir: string, now = new Date()): Promise<PodVolumes> {
  const ns = pod.metadata?.namespace ?? 'default';
  const roots = new Map<string, string>();
  for (const v of pod.spec?.volumes ?? []) {
    if (v.configMap === undefined) continue;
    let cm: V1ConfigMap | undefined;
    try {
      cm = await client.get<V1ConfigMap>(`/api/v1/namespaces/${ns}/configmaps/${v.configMap.name}`);
    } catch (e) {
      if (!isStatus(e, 404)) return { ok: false, volume: v.name, reason: `reading configmap "${v.configMap.name}": ${(e as Error).message}` };
      cm = undefined;
    }
    const p = projectConfigMap(v.configMap, cm);
    if (!p.ok) return { ok: false, volume: v.name, reason: p.reason };
    const dir = join(podDir, 'volumes', 'kubernetes.io~configmap', v.name);
    writeVolume(dir, p.files, now);
    roots.set(v.name, dir);
  }
  return { ok: true, mounts: containerMounts(pod, roots) };
}

/** Per container name, its `volumeMounts` of the volumes in `roots` (volume name → folder here), `subPath` applied. */
export function containerMounts(pod: V1Pod, roots: ReadonlyMap<string, string>): Map<string, Record<string, string>> {
  const mounts = new Map<string, Record<string, string>>();
  for (const c of [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])]) {
    const m: Record<string, string> = {};
    for (const vm of c.volumeMounts ?? []) {
      const root = roots.get(vm.name);
      if (root !== undefined) m[vm.mountPath.replace(/\/+$/, '')] = vm.subPath === undefined || vm.subPath === '' ? root : join(root, vm.subPath);
    }
    if (Object.keys(m).length > 0) mounts.set(c.name, m);
  }
  return mounts;
}

/** `over` on top of `base`, the longest container path first (a mount inside a mapped folder wins over the folder). */
export function overlayPaths(base: Readonly<Record<string, string>>, over: Readonly<Record<string, string>> | undefined): Record<string, string> {
  if (over === undefined) return { ...base };
  return Object.fromEntries(Object.entries({ ...base, ...over }).sort((a, b) => b[0].length - a[0].length));
}
