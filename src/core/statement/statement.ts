/**
 * A statement records allocate/release steps against the cluster state (the "assume" of kube-scheduler,
 * the Statement of Volcano/KAI). `checkpoint()`/`rollback()` make a gang all-or-nothing; `commit()` hands the
 * recorded steps to the statement's commit target (the host's Binder and Evictor, see `commitToPorts`), which
 * is the only path by which a decision reaches a cluster. A statement without a target is a trial: its
 * commit changes the state and reaches nothing else (forward runs, explanations over a copy).
 */
import type { Allocation, ClusterState } from '../snapshot/cluster-state.ts';

export type StatementOp =
  { readonly kind: 'allocate'; readonly allocation: Allocation } | { readonly kind: 'release'; readonly allocation: Allocation; readonly reason?: string };

/** Receives the steps of every committed statement, in order. */
export interface CommitTarget {
  commit(ops: readonly StatementOp[]): void;
}

/** Shared by every statement without steps (most hold one or none): never pushed to. */
const NO_OPS: StatementOp[] = [];

export class Statement {
  private ops: StatementOp[] = NO_OPS;
  private closed = false;

  constructor(
    private readonly state: ClusterState,
    private readonly target?: CommitTarget,
  ) {}

  allocate(a: Allocation): void {
    this.assertOpen();
    this.state.allocate(a);
    this.record({ kind: 'allocate', allocation: a });
  }

  /** Releases a pod's allocation (an eviction in a preemption plan, with its reason when it is one). */
  release(podId: string, reason?: string): Allocation | undefined {
    this.assertOpen();
    const a = this.state.release(podId);
    if (a !== undefined) this.record(reason === undefined ? { kind: 'release', allocation: a } : { kind: 'release', allocation: a, reason });
    return a;
  }

  private record(op: StatementOp): void {
    if (this.ops === NO_OPS) this.ops = [op];
    else this.ops.push(op);
  }

  checkpoint(): number {
    return this.ops.length;
  }

  /** Undoes every step after the checkpoint, newest first. */
  rollback(checkpoint = 0): void {
    this.assertOpen();
    while (this.ops.length > checkpoint) {
      const op = this.ops.pop() as StatementOp;
      if (op.kind === 'allocate') this.state.release(op.allocation.podId);
      else this.state.allocate(op.allocation);
    }
  }

  /** Ends the statement: the steps stay applied to the state and go to the commit target to be carried out. */
  commit(): readonly StatementOp[] {
    this.assertOpen();
    this.closed = true;
    const ops = this.ops;
    this.ops = NO_OPS;
    if (ops.length > 0) this.target?.commit(ops);
    return ops;
  }

  /** Rolls everything back and ends the statement. */
  discard(): void {
    this.rollback(0);
    this.closed = true;
  }

  get size(): number {
    return this.ops.length;
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('statement already committed or discarded');
  }
}
