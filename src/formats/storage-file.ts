/**
 * Storage in a scenario (`storage:`): StorageClasses, PersistentVolumes and PersistentVolumeClaims in their
 * Kubernetes form, read as the live cache reads them (api/storage.ts, ADR 0070). Errors name file:line:column.
 *
 * ```yaml
 * storage:
 *   classes: [{metadata: {name: local}, provisioner: kubernetes.io/no-provisioner, volumeBindingMode: WaitForFirstConsumer}]
 *   volumes:
 *     - metadata: {name: pv-a}
 *       spec: {capacity: {storage: 10Gi}, accessModes: [ReadWriteOnce], storageClassName: local,
 *              nodeAffinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [n0]}]}]}}}
 *       status: {phase: Available}
 *   claims: [{metadata: {name: data}, spec: {storageClassName: local, accessModes: [ReadWriteOnce], resources: {requests: {storage: 5Gi}}}}]
 * ```
 * Without a `status`, a volume is Available (Bound when it has a claimRef) and a claim with `spec.volumeName` is
 * bound to it, as the PV controller leaves them; write the status to model anything else.
 */
import { Type } from '@sinclair/typebox';
import { err, ok, type Result } from '../core/result.ts';
import type { StorageObjects } from '../core/snapshot/volume-catalog.ts';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '../core/model/volume.ts';
import {
  ANN_BIND_COMPLETED,
  readPersistentVolume,
  readPersistentVolumeClaim,
  readStorageClass,
  type PersistentVolumeClaimLike,
  type PersistentVolumeLike,
  type StorageClassLike,
} from '../api/storage.ts';
import { InputError, issueAt, validateYaml, type InputIssue, type YamlSource } from './yaml-source.ts';

const Obj = Type.Object({ metadata: Type.Object({ name: Type.String({ minLength: 1 }) }, { additionalProperties: true }) }, { additionalProperties: true });
const StorageT = Type.Object(
  { classes: Type.Optional(Type.Array(Obj)), volumes: Type.Optional(Type.Array(Obj)), claims: Type.Optional(Type.Array(Obj)) },
  { additionalProperties: false },
);

export function loadStorage(src: YamlSource, prefix: readonly (string | number)[]): Result<StorageObjects, InputError> {
  const v = validateYaml(src, StorageT, prefix);
  if (!v.ok) return v;
  const issues: InputIssue[] = [];
  const read = <T, O>(list: readonly unknown[] | undefined, key: string, f: (o: O) => Result<T, string>): T[] => {
    const out: T[] = [];
    const names = new Set<string>();
    (list ?? []).forEach((o, i) => {
      const r = f(o as O);
      if (!r.ok) {
        issues.push(issueAt(src, [...prefix, key, i], r.error));
        return;
      }
      const id = JSON.stringify([(o as { metadata: { namespace?: string } }).metadata.namespace ?? '', (o as { metadata: { name: string } }).metadata.name]);
      if (names.has(id)) issues.push(issueAt(src, [...prefix, key, i, 'metadata', 'name'], 'duplicate name'));
      names.add(id);
      out.push(r.value);
    });
    return out;
  };
  const classes = read<StorageClass, StorageClassLike>(v.value.classes, 'classes', (o) => readStorageClass(o));
  // Without a status, objects are as the PV controller leaves them: a volume Available (Bound with a claimRef), a
  // claim with spec.volumeName bound to it (bind-completed), other claims Pending.
  const volumes = read<PersistentVolume, PersistentVolumeLike>(v.value.volumes, 'volumes', (o) =>
    readPersistentVolume(o.status?.phase !== undefined ? o : { ...o, status: { phase: o.spec?.claimRef === undefined ? 'Available' : 'Bound' } }),
  );
  const claims = read<PersistentVolumeClaim, PersistentVolumeClaimLike>(v.value.claims, 'claims', (o) =>
    readPersistentVolumeClaim(
      o.status?.phase !== undefined || o.spec?.volumeName === undefined
        ? o
        : { ...o, metadata: { ...o.metadata, annotations: { ...o.metadata?.annotations, [ANN_BIND_COMPLETED]: 'yes' } }, status: { phase: 'Bound' } },
    ),
  );
  if (issues.length > 0) return err(new InputError(issues));
  return ok({ classes, volumes, claims });
}
