/**
 * The tenants of BatchInferenceJobs for the weighted-fair GPU share (controllers/batch-inference/gpu-share.ts,
 * ADR 0140): a job in a Queue is that Queue's tenant with the Queue's weight (kube/cache/queues.ts: its tier's, or its
 * own weight), read from one watch of the Queues, so batch jobs and the scheduler's queue cycle agree on who a
 * tenant is and what it weighs. A job naming no queue, or one not (yet) known, is the tenant of its tier.
 */
import { API_GROUP_VERSION } from '../../api/wire.ts';
import { defaultTenant } from '../../controllers/batch-inference/controller.ts';
import type { ShareTenant } from '../../controllers/batch-inference/gpu-share.ts';
import type { BatchJobObject } from '../../controllers/batch-inference/pods.ts';
import type { KubeClient } from '../../kube/client/client.ts';
import { queueFromObject, type QueueObject } from '../../kube/cache/queues.ts';
import { Reflector } from '../../kube/client/reflector.ts';

export interface QueueTenants {
  tenantOf(job: BatchJobObject): ShareTenant;
  stop(): void;
}

export async function watchQueueTenants(client: KubeClient, log: (m: string) => void = () => undefined): Promise<QueueTenants> {
  const r = new Reflector<QueueObject & { metadata?: { name?: string } }>(client, `/apis/${API_GROUP_VERSION}/queues`, {
    add: () => undefined,
    update: () => undefined,
    delete: () => undefined,
    error: (e) => log(`batch GPU share: watching Queues: ${e.message}`),
  });
  await r.start();
  return {
    tenantOf(job) {
      const q = job.spec.queue === undefined ? undefined : r.items.get(job.spec.queue);
      return q === undefined ? defaultTenant(job) : { name: job.spec.queue as string, weight: queueFromObject(q).weight };
    },
    stop: () => r.stop(),
  };
}
