/**
 * The NCCL topology file of a pod that asks for one (`ANNOTATION.ncclTopologyFile: generate`), written through the
 * same Binding object that records its GPUs: no extra API call, no extra permission, and the kubelet — which
 * starts the pod only after the binding — finds it in the pod's annotations, where a downward API volume turns it
 * into the file NCCL_TOPO_FILE names (controllers/training-job/pods.ts). When the node does not publish what the
 * file needs (GPU bus ids), the pod gets an empty `<system>`, which NCCL fills entirely from its own detection,
 * and the reason comes back for an event.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { NodeSpec } from '../../core/model/node.ts';
import { ANNOTATION } from '../../api/wire.ts';
import { ncclTopologyXml } from '../../formats/nccl-topology.ts';

export const EMPTY_NCCL_SYSTEM = '<system version="1"></system>\n';

export interface NcclTopologyAnnotation {
  readonly xml: string;
  /** Why the file is the empty system, when it is. */
  readonly problem?: string;
}

export function ncclTopologyForBinding(pod: V1Pod | undefined, node: NodeSpec | undefined, gpus: readonly number[]): NcclTopologyAnnotation | undefined {
  if (pod?.metadata?.annotations?.[ANNOTATION.ncclTopologyFile] !== 'generate' || gpus.length === 0) return undefined;
  if (node === undefined) return { xml: EMPTY_NCCL_SYSTEM, problem: 'the node is not in the cache' };
  if (node.pci === undefined)
    return {
      xml: EMPTY_NCCL_SYSTEM,
      problem: `node ${node.name} publishes no GPU PCI bus ids (annotation ${ANNOTATION.gpuBusIds}, written by sits node-agent)`,
    };
  const r = ncclTopologyXml({ topology: node.topology, busIds: node.pci.busIds, nics: node.pci.nics, gpus, sm: node.gpus[0]?.computeCapability ?? 0 });
  return r.ok ? { xml: r.value } : { xml: EMPTY_NCCL_SYSTEM, problem: `node ${node.name}: ${r.error}` };
}
