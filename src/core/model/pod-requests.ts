/**
 * What a pod requests of a node, summed over its containers exactly as kube-scheduler does
 * (`k8s.io/component-helpers/resource.PodRequests`): regular containers add up; restartable init containers
 * (sidecars, `restartPolicy: Always`) run beside them and add up too; an ordinary init container runs alone
 * with the sidecars started before it, so the pod needs
 * max(Σ containers + Σ sidecars, max over init containers i of (init_i + Σ sidecars before i)), per resource,
 * plus the pod overhead (RuntimeClass) on top.
 */

/** One container's requests by resource name, in the caller's units (the same units for every container). */
export interface ContainerRequests {
  readonly requests: Readonly<Record<string, number>>;
  /** An init container with `restartPolicy: Always` (a sidecar). */
  readonly sidecar?: boolean;
}

export function podRequests(
  containers: readonly ContainerRequests[],
  initContainers: readonly ContainerRequests[] = [],
  overhead: Readonly<Record<string, number>> = {},
): Record<string, number> {
  const reqs: Record<string, number> = {};
  for (const c of containers) add(reqs, c.requests);
  const sidecars: Record<string, number> = {};
  const initMax: Record<string, number> = {};
  for (const c of initContainers) {
    let running: Record<string, number>;
    if (c.sidecar === true) {
      add(reqs, c.requests);
      add(sidecars, c.requests);
      running = sidecars;
    } else {
      running = { ...sidecars };
      add(running, c.requests);
    }
    for (const k in running) initMax[k] = Math.max(initMax[k] ?? 0, running[k] as number);
  }
  for (const k in initMax) reqs[k] = Math.max(reqs[k] ?? 0, initMax[k] as number);
  add(reqs, overhead);
  return reqs;
}

function add(into: Record<string, number>, r: Readonly<Record<string, number>>): void {
  for (const k in r) into[k] = (into[k] ?? 0) + (r[k] as number);
}
