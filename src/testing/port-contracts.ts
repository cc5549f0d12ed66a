/**
 * One contract test suite per port (Binder, Evictor, EventSink, StatusWriter), run against every adapter:
 * the simulated cluster (src/sim/sim-cluster.test.ts) and the live adapters on a real kube-apiserver
 * (src/kube/adapters/ports.e2e.test.ts). What a host may rely on is what these tests say, whichever cluster it runs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Clock, ClusterPorts } from '../core/ports.ts';

export interface PortHarness {
  readonly ports: ClusterPorts;
  /** Two nodes with at least 4 GPUs each. */
  readonly nodes: readonly [string, string];
  /** Creates waiting pods with these ids (`namespace/name`), each asking for `gpus` GPUs. */
  createPods(ids: readonly string[], gpus: number): Promise<void>;
  /** Runs what the host does between cycles (live: nominated bindings whose victims left). */
  tick(): void;
  /** Where the cluster says the pod is bound, with its GPU indices. */
  boundTo(id: string): Promise<{ readonly node: string; readonly gpus: readonly number[] } | undefined>;
  exists(id: string): Promise<boolean>;
  events(id: string): Promise<readonly { readonly kind: string; readonly message: string }[]>;
  /** The message of the pod's PodScheduled=False condition. */
  unschedulableMessage(id: string): Promise<string | undefined>;
  expectedStartMs(id: string): Promise<number | undefined>;
  /** Polls `read` until `ok` holds (live effects are asynchronous; the simulated ones are immediate). */
  eventually<T>(what: string, read: () => Promise<T>, ok: (v: T) => boolean): Promise<T>;
  close(): Promise<void>;
}

export function describePortContracts(adapter: string, setup: () => Promise<PortHarness>): void {
  describe(`port contracts: ${adapter}`, () => {
    let h: PortHarness;
    let n = 0;
    const ids = (k: number): string[] => Array.from({ length: k }, () => `contract/p-${n++}`);
    beforeAll(async () => {
      h = await setup();
    });
    afterAll(async () => {
      await h?.close();
    });

    describe('Binder', () => {
      it('binds a single pod to the node and GPU devices asked, and says so in a Scheduled event', async () => {
        const [p] = ids(1) as [string];
        await h.createPods([p], 2);
        h.ports.binder.bind({ requests: [{ podId: p, node: h.nodes[0], gpus: [1, 2] }], after: [] });
        const b = await h.eventually(
          'bound',
          () => h.boundTo(p),
          (x) => x !== undefined,
        );
        expect(b).toEqual({ node: h.nodes[0], gpus: [1, 2] });
        const evs = await h.eventually(
          'Scheduled event',
          () => h.events(p),
          (e) => e.some((x) => x.kind === 'Scheduled'),
        );
        expect(evs.find((x) => x.kind === 'Scheduled')?.message).toContain(h.nodes[0]);
      });

      it('binds every member of a gang batch', async () => {
        const gang = ids(3);
        await h.createPods(gang, 1);
        h.ports.binder.bind({ requests: gang.map((podId, i) => ({ podId, node: h.nodes[i % 2] as string, gpus: [3] })), gang: 'contract/g', after: [] });
        for (const [i, p] of gang.entries())
          expect(
            await h.eventually(
              `${p} bound`,
              () => h.boundTo(p),
              (x) => x !== undefined,
            ),
          ).toEqual({ node: h.nodes[i % 2], gpus: [3] });
      });

      it('binds a batch that must wait for victims once they are evicted', async () => {
        const [victim, preemptor] = ids(2) as [string, string];
        await h.createPods([victim, preemptor], 1);
        h.ports.binder.bind({ requests: [{ podId: victim, node: h.nodes[1], gpus: [0] }], after: [] });
        await h.eventually(
          'victim bound',
          () => h.boundTo(victim),
          (x) => x !== undefined,
        );
        // As a committed preemption statement reaches the ports: evictions first, then the batch after them.
        h.ports.evictor.evict([victim], 'preempted by higher-priority contract/x');
        h.ports.binder.bind({ requests: [{ podId: preemptor, node: h.nodes[1], gpus: [0] }], after: [victim] });
        await h.eventually(
          'victim gone',
          () => h.exists(victim),
          (x) => !x,
        );
        h.tick();
        expect(
          await h.eventually(
            'preemptor bound',
            async () => (h.tick(), h.boundTo(preemptor)),
            (x) => x !== undefined,
          ),
        ).toEqual({ node: h.nodes[1], gpus: [0] });
      });

      it('binds none of a gang when the cluster refuses one member (it does not exist)', async () => {
        const [a, b] = ids(2) as [string, string];
        const missing = `contract/missing-${n++}`;
        await h.createPods([a, b], 1);
        h.ports.binder.bind({ requests: [a, missing, b].map((podId) => ({ podId, node: h.nodes[0], gpus: [0] })), gang: 'contract/half', after: [] });
        // Give a wrong adapter the time to bind what it should not.
        await new Promise((r) => setTimeout(r, 500));
        await h.eventually(
          'nothing bound',
          async () => [await h.boundTo(a), await h.boundTo(b)],
          (x) => x.every((v) => v === undefined),
        );
        expect(await h.boundTo(a)).toBeUndefined();
        expect(await h.boundTo(b)).toBeUndefined();
      });
    });

    describe('Evictor', () => {
      it('removes the pods given', async () => {
        const pods = ids(2);
        await h.createPods(pods, 1);
        h.ports.binder.bind({ requests: pods.map((podId) => ({ podId, node: h.nodes[0], gpus: [3] })), gang: 'contract/victim', after: [] });
        for (const p of pods)
          await h.eventually(
            `${p} bound`,
            () => h.boundTo(p),
            (x) => x !== undefined,
          );
        h.ports.evictor.evict(pods, 'reclaimed by queue a for contract/x');
        for (const p of pods)
          expect(
            await h.eventually(
              `${p} gone`,
              () => h.exists(p),
              (x) => !x,
            ),
          ).toBe(false);
      });
    });

    describe('EventSink', () => {
      it('records an event on the pod with its kind and message', async () => {
        const [p] = ids(1) as [string];
        await h.createPods([p], 1);
        h.ports.events.emit({ kind: 'FailedScheduling', subject: p, message: '0/2 nodes fit pod contract: 2 insufficient nvidia.com/gpu' });
        const evs = await h.eventually(
          'event',
          () => h.events(p),
          (e) => e.length > 0,
        );
        expect(evs).toContainEqual({ kind: 'FailedScheduling', message: '0/2 nodes fit pod contract: 2 insufficient nvidia.com/gpu' });
      });
    });

    describe('StatusWriter', () => {
      it('marks waiting pods unschedulable with the message, and records their expected start', async () => {
        const pods = ids(2);
        await h.createPods(pods, 1);
        h.ports.status.unschedulable(pods, 'queue a holds contract/g (capacity): 0/2 nodes fit');
        const at = Date.parse('2030-01-02T03:04:05.000Z');
        h.ports.status.expectedStart(pods, at);
        for (const p of pods) {
          expect(
            await h.eventually(
              'condition',
              () => h.unschedulableMessage(p),
              (m) => m !== undefined,
            ),
          ).toBe('queue a holds contract/g (capacity): 0/2 nodes fit');
          expect(
            await h.eventually(
              'expected start',
              () => h.expectedStartMs(p),
              (t) => t !== undefined,
            ),
          ).toBe(at);
        }
      });
    });
  });
}

/** The Clock port: a number of ms that never goes back and moves on as time passes (virtual or real). */
export function describeClockContract(adapter: string, setup: () => { readonly clock: Clock; advance(ms: number): Promise<void> }): void {
  describe(`port contract: Clock (${adapter})`, () => {
    it('never goes back, and has moved on by at least the time that passed', async () => {
      const { clock, advance } = setup();
      let last = clock.nowMs();
      expect(Number.isFinite(last)).toBe(true);
      for (const ms of [0, 1, 25, 100]) {
        const before = clock.nowMs();
        await advance(ms);
        const now = clock.nowMs();
        expect(now).toBeGreaterThanOrEqual(last);
        expect(now - before).toBeGreaterThanOrEqual(ms);
        last = now;
      }
    });
  });
}
