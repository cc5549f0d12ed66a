// Bad extender requests are answered 400 naming the field (the handler reads them through these checks).
import { describe, expect, it } from 'vitest';
import { bindingArgs, extenderArgs, preemptionArgs } from './extender-server.ts';

const pod = { metadata: { name: 'p', namespace: 'ns' } };
const msg = (f: () => unknown): string => {
  try {
    f();
  } catch (e) {
    return `${(e as { status: number }).status} ${(e as Error).message}`;
  }
  return 'accepted';
};

describe('extender request checks', () => {
  it('ExtenderArgs: Pod, NodeNames or Nodes, each field named when wrong', () => {
    expect(msg(() => extenderArgs({ Pod: pod, NodeNames: ['a', 'b'] }))).toBe('accepted');
    expect(msg(() => extenderArgs({ Pod: pod, Nodes: { items: [{ metadata: { name: 'a' } }] } }))).toBe('accepted');
    expect(msg(() => extenderArgs([]))).toBe('400 ExtenderArgs: want an object, got an array');
    expect(msg(() => extenderArgs({ NodeNames: [] }))).toBe('400 ExtenderArgs.Pod: want a Pod object, got undefined');
    expect(msg(() => extenderArgs({ Pod: { metadata: {} }, NodeNames: [] }))).toBe('400 ExtenderArgs.Pod.metadata.name: want a string, got undefined');
    expect(msg(() => extenderArgs({ Pod: pod, NodeNames: 'a' }))).toBe('400 ExtenderArgs.NodeNames: want an array of node names, got string');
    expect(msg(() => extenderArgs({ Pod: pod, NodeNames: ['a', 3] }))).toBe('400 ExtenderArgs.NodeNames[1]: want a string, got number');
    expect(msg(() => extenderArgs({ Pod: pod, Nodes: { items: [null] } }))).toBe('400 ExtenderArgs.Nodes.items[0]: want a Node object, got null');
    expect(msg(() => extenderArgs({ Pod: pod }))).toBe('400 ExtenderArgs: neither NodeNames nor Nodes given');
  });

  it('ExtenderBindingArgs and ExtenderPreemptionArgs', () => {
    expect(msg(() => bindingArgs({ PodName: 'p', PodNamespace: 'ns', PodUID: 'u', Node: 'n' }))).toBe('accepted');
    expect(msg(() => bindingArgs({ PodName: 'p', PodNamespace: 'ns', Node: 7 }))).toBe('400 ExtenderBindingArgs.Node: want a string, got number');
    expect(msg(() => preemptionArgs({ Pod: pod, NodeNameToMetaVictims: { a: { Pods: [{ UID: 'x' }], NumPDBViolations: 0 }, b: null } }))).toBe('accepted');
    expect(msg(() => preemptionArgs({ Pod: pod, NodeNameToMetaVictims: { a: { Pods: [{ UID: 1 }] } } }))).toBe(
      '400 ExtenderPreemptionArgs.NodeNameToMetaVictims[a].Pods[0].UID: want a string, got number',
    );
    expect(msg(() => preemptionArgs({ Pod: pod, NodeNameToVictims: [] }))).toBe(
      '400 ExtenderPreemptionArgs.NodeNameToVictims: want a map of node name to victims, got an array',
    );
  });
});
