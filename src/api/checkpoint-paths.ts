/**
 * Whether every rank of a job sees the same checkpoint directory (001 §3.3: a path that is local to one pod makes a
 * rescheduled rank silently start over). Shared by the guard rule checkpoint-on-pod-local-storage (which lints any
 * workload) and the TrainingJob controller (which refuses a job with a checkpoint policy whose ranks would see
 * different paths). Pure; reads plain JSON, never trusts its shape.
 */

const isRecord = (v: unknown): v is Readonly<Record<string, unknown>> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Why a pod volume (a core/v1 Volume) is private to one pod, or undefined when it may be shared. */
export function podLocalVolumeReason(volume: unknown): string | undefined {
  if (!isRecord(volume)) return undefined;
  if (volume.emptyDir !== undefined) return 'an emptyDir (deleted with the pod)';
  if (volume.hostPath !== undefined) return 'a hostPath (a different directory on every node)';
  if (volume.ephemeral !== undefined) return 'a generic ephemeral volume (one PVC per pod, deleted with it)';
  return undefined;
}

/** The name of the volume the TrainingJob controller adds for spec.checkpoint (a pod template must not use it). */
export const CHECKPOINT_VOLUME_NAME = 'sits-checkpoint';
/** The variable that tells every rank where the shared checkpoint directory is. */
export const CHECKPOINT_DIR_ENV = 'SITS_CHECKPOINT_DIR';

export interface CheckpointPathProblem {
  /** Field path as the apiserver prints it, e.g. `spec.podTemplate.spec.volumes[0]`. */
  readonly path: string;
  readonly message: string;
}

const within = (dir: string, p: string): boolean => {
  const d = dir.replace(/\/+$/, '');
  const q = p.replace(/\/+$/, '');
  return q === d || q.startsWith(`${d}/`) || d.startsWith(`${q}/`);
};

/**
 * Problems with a TrainingJob spec that sets `checkpoint`: the controller mounts the one shared claim at
 * `checkpoint.mountPath` in every rank, so any pod template volume or mount that would put something per-pod at or
 * under that path, a volume named like the controller's, or an env entry moving the directory elsewhere is refused.
 */
export function checkpointPathProblems(spec: unknown): CheckpointPathProblem[] {
  if (!isRecord(spec) || !isRecord(spec.checkpoint)) return [];
  const mountPath = typeof spec.checkpoint.mountPath === 'string' ? spec.checkpoint.mountPath : '/checkpoints';
  const out: CheckpointPathProblem[] = [];
  const envs = (list: unknown, at: string): void => {
    if (!Array.isArray(list)) return;
    list.forEach((e, k) => {
      if (isRecord(e) && e.name === CHECKPOINT_DIR_ENV) {
        out.push({
          path: `${at}[${k}]`,
          message: `${CHECKPOINT_DIR_ENV} is set by the controller to spec.checkpoint.mountPath (${mountPath}); overriding it would point ranks at different directories`,
        });
      }
    });
  };
  if (isRecord(spec.container)) envs(spec.container.env, 'spec.container.env');
  const podSpec = isRecord(spec.podTemplate) && isRecord(spec.podTemplate.spec) ? spec.podTemplate.spec : undefined;
  if (podSpec === undefined) return out;
  const volumes = new Map<string, { v: unknown; i: number }>();
  if (Array.isArray(podSpec.volumes)) {
    podSpec.volumes.forEach((v, i) => {
      if (!isRecord(v) || typeof v.name !== 'string') return;
      volumes.set(v.name, { v, i });
      if (v.name === CHECKPOINT_VOLUME_NAME)
        out.push({
          path: `spec.podTemplate.spec.volumes[${i}]`,
          message: `volume name ${CHECKPOINT_VOLUME_NAME} is the controller's checkpoint volume (spec.checkpoint.volume); rename it`,
        });
    });
  }
  for (const key of ['containers', 'initContainers'] as const) {
    const cs = podSpec[key];
    if (!Array.isArray(cs)) continue;
    cs.forEach((c, j) => {
      if (!isRecord(c)) return;
      envs(c.env, `spec.podTemplate.spec.${key}[${j}].env`);
      if (!Array.isArray(c.volumeMounts)) return;
      c.volumeMounts.forEach((m, k) => {
        if (!isRecord(m) || typeof m.mountPath !== 'string' || !within(mountPath, m.mountPath)) return;
        const name = typeof m.name === 'string' ? m.name : '';
        const vol = volumes.get(name);
        const why = podLocalVolumeReason(vol?.v);
        const what = why === undefined ? `volume ${name}` : `volume ${name}, ${why}`;
        out.push({
          path: `spec.podTemplate.spec.${key}[${j}].volumeMounts[${k}]`,
          message: `mount ${m.mountPath} of ${what} overlaps the shared checkpoint directory spec.checkpoint.mountPath (${mountPath}): ranks would see different checkpoint paths; remove it (the controller mounts spec.checkpoint.volume there in every rank)`,
        });
      });
    });
  }
  return out;
}
