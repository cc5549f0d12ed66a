import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { ANNOTATION } from '../../api/wire.ts';
import { readNcclTopology } from '../../formats/nccl-topology.ts';
import { nodeFromK8s, nodeObjectFor } from '../cache/labels.ts';
import { EMPTY_NCCL_SYSTEM, ncclTopologyForBinding } from './nccl-topology-binding.ts';

const BUS = ['0000:07:00.0', '0000:0f:00.0', '0000:47:00.0', '0000:4e:00.0'];

function a800(annotations: Record<string, string>): V1Node {
  const o = nodeObjectFor('n1', 'a800x4', { zone: 'z', block: 'b', rack: 'r' });
  return {
    metadata: { name: o.name, labels: o.labels, annotations: { ...o.annotations, ...annotations } },
    status: { capacity: o.capacity, allocatable: o.capacity },
  };
}

const spec = (n: V1Node) => {
  const r = nodeFromK8s(n);
  if (!r.ok) throw new Error(r.error);
  return r.value;
};

const asking: V1Pod = { metadata: { name: 'p', namespace: 'ml', annotations: { [ANNOTATION.ncclTopologyFile]: 'generate' } } };

describe('node PCI annotations', () => {
  it('are read into the node (bus ids by GPU index, NICs by where they sit)', () => {
    const n = spec(a800({ [ANNOTATION.gpuBusIds]: BUS.join(','), [ANNOTATION.nics]: 'mlx5_0@0/1,mlx5_1@1' }));
    expect(n.pci).toEqual({
      busIds: BUS,
      nics: [
        { name: 'mlx5_0', numa: 0, nearGpu: 1 },
        { name: 'mlx5_1', numa: 1 },
      ],
    });
    expect(spec(a800({})).pci).toBeUndefined();
  });

  it('refuse the node naming the annotation when they are wrong', () => {
    expect(nodeFromK8s(a800({ [ANNOTATION.gpuBusIds]: BUS.slice(0, 3).join(',') }))).toEqual({
      ok: false,
      error: `node n1: annotation ${ANNOTATION.gpuBusIds}: 3 bus ids for 4 GPUs`,
    });
    expect(nodeFromK8s(a800({ [ANNOTATION.gpuBusIds]: BUS.join(','), [ANNOTATION.nics]: 'mlx5_0@0/7' }))).toEqual({
      ok: false,
      error: `node n1: annotation ${ANNOTATION.nics}: "mlx5_0@0/7": GPU 7 is not on the node (it has 4)`,
    });
  });
});

describe('the NCCL topology file written with the binding', () => {
  const node = spec(a800({ [ANNOTATION.gpuBusIds]: BUS.join(','), [ANNOTATION.nics]: 'mlx5_0@0/1,mlx5_1@1/3' }));

  it('describes exactly the GPUs bound and the NICs under their switches', () => {
    const r = ncclTopologyForBinding(asking, node, [2, 3]);
    expect(r?.problem).toBeUndefined();
    const file = readNcclTopology(r?.xml ?? '');
    if (!file.ok) throw new Error(file.error);
    expect(file.value.gpus.map((g) => [g.busId, g.numa, g.sm])).toEqual([
      ['0000:47:00.0', 1, 80],
      ['0000:4e:00.0', 1, 80],
    ]);
    expect(file.value.gpus[0]?.nvlinks).toEqual([{ target: '0000:4e:00.0', count: 8, tclass: '0x030200' }]);
    expect(file.value.nics.map((n) => n.name)).toEqual(['mlx5_1']);
  });

  it('only for pods that ask and hold GPUs', () => {
    expect(ncclTopologyForBinding({ metadata: { name: 'p' } }, node, [0])).toBeUndefined();
    expect(ncclTopologyForBinding(asking, node, [])).toBeUndefined();
    expect(ncclTopologyForBinding(undefined, node, [0])).toBeUndefined();
  });

  it('is the empty system, with the reason, when the node does not say enough', () => {
    expect(ncclTopologyForBinding(asking, spec(a800({})), [0])).toEqual({
      xml: EMPTY_NCCL_SYSTEM,
      problem: `node n1 publishes no GPU PCI bus ids (annotation ${ANNOTATION.gpuBusIds}, written by sits node-agent)`,
    });
    expect(ncclTopologyForBinding(asking, undefined, [0])).toEqual({ xml: EMPTY_NCCL_SYSTEM, problem: 'the node is not in the cache' });
    expect(ncclTopologyForBinding(asking, node, [9])).toEqual({ xml: EMPTY_NCCL_SYSTEM, problem: 'node n1: GPU 9 is not on the node (it has 4)' });
    expect(readNcclTopology(EMPTY_NCCL_SYSTEM)).toEqual({ ok: true, value: { gpus: [], nics: [] } });
  });
});
