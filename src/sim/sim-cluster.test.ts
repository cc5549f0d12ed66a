import { describeClockContract, describePortContracts } from '../testing/port-contracts.ts';
import { Environment } from './engine.ts';
import { SimCluster } from './sim-cluster.ts';

describePortContracts('simulated cluster', async () => {
  const cluster = new SimCluster({}, { recordEvents: true, strictPods: true });
  return {
    ports: cluster.ports,
    nodes: ['n-0', 'n-1'],
    createPods: async (ids) => cluster.create(ids),
    tick: () => undefined,
    boundTo: async (id) => {
      const b = cluster.bound.get(id);
      return b === undefined ? undefined : { node: b.node, gpus: b.gpus };
    },
    exists: async (id) => cluster.exists(id),
    events: async (id) => cluster.events.filter((e) => e.subject === id).map((e) => ({ kind: e.kind, message: e.message })),
    unschedulableMessage: async (id) => cluster.unschedulable.get(id),
    expectedStartMs: async (id) => cluster.expected.get(id),
    eventually: async (_what, read) => read(),
    close: async () => undefined,
  };
});

describeClockContract('virtual time of the simulation environment', () => {
  const env = new Environment<null>(() => undefined);
  return { clock: env.clock, advance: async (ms) => env.run(env.nowMs + ms) };
});
