/**
 * The one signal SITS gives the TrainingJob controller before it evicts a gang on purpose (a move off a quarantined
 * GPU, a preemption, a defragmentation move; ADR 0129, ADR 0143): `ai.sits2026.dev/gang-evicted` on the TrainingJob
 * names the attempt and why, so the controller restarts the gang at once as `GangMoved` and does not count it
 * against backoffLimit. Every evicting path writes it through `announceGangEviction`, then deletes.
 */
import { ANNOTATION, API_PATH } from '../../api/wire.ts';
import type { KubeClient } from '../client/client.ts';

/** Between the annotation and the deletes: the controller's job watch and pod watch are separate streams. */
export const DEFAULT_ANNOUNCE_MS = 1000;

/** The annotation's value: attempt N of the job is being evicted by SITS for `reason`. */
export function gangEvictedValue(attempt: number, reason: string, message: string): string {
  return JSON.stringify({ attempt, reason, message: message.slice(0, 1000) });
}

/** Writes the signal on TrainingJob `ns/name`, then waits `announceMs` so it reaches the controller before the deletes. */
export async function announceGangEviction(
  client: KubeClient,
  ns: string,
  name: string,
  attempt: number,
  reason: string,
  message: string,
  announceMs = DEFAULT_ANNOUNCE_MS,
): Promise<void> {
  await client.mergePatch(`${API_PATH}/namespaces/${ns}/trainingjobs/${name}`, {
    metadata: { annotations: { [ANNOTATION.gangEvicted]: gangEvictedValue(attempt, reason, message) } },
  });
  if (announceMs > 0) await new Promise((r) => setTimeout(r, announceMs));
}
