/**
 * The invariants of `sits bench chaos`, computed from what the apiserver saw — the bench's own watch of pods (in
 * resourceVersion order) and the kube-apiserver audit log (bindings, Lease writes) — never from the scheduler's claims.
 * Pure: the run records a ChaosHistory, this counts the violations (each a count that must be 0) and says which.
 */

/** One pod as a watch event showed it. `t` is the bench's wall clock (ms) when the event arrived. */
export interface PodObs {
  readonly t: number;
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  readonly uid: string;
  readonly ns: string;
  readonly name: string;
  /** spec.nodeName, '' while unbound. */
  readonly node: string;
  /** nvidia.com/gpu asked for. */
  readonly gpus: number;
  /** The scheduler's gpu-indices annotation ('' when none). */
  readonly gpuIndices: string;
  /** Succeeded or Failed: holds nothing any more. */
  readonly terminal: boolean;
  /** `ns/name` of the gang (pod-group label), if any. */
  readonly gang?: string;
  /** uid of the controller owner, if any. */
  readonly ownerUid?: string;
  /** The submitted slot this pod fills (a single pod, a TrainingJob rank, an InferenceService replica slot). */
  readonly slot?: string;
  /** Evidence only, never read by the checker: the object's resourceVersion, and the size of the burst it came in (a relist's). */
  readonly rv?: string;
  readonly burst?: number;
}

/** A pods/binding create (or a pod delete) in the audit log (ResponseComplete): who sent it, when it arrived, how it ended. */
export interface BindRecord {
  readonly receivedMs: number;
  readonly user: string;
  readonly ns: string;
  readonly name: string;
  readonly code: number;
}

/** A successful Lease write (create or update) in the audit log: the holder it wrote, when it was stored. */
export interface LeaseRecord {
  readonly storedMs: number;
  readonly user: string;
  readonly holder: string;
}

export interface ChaosHistory {
  /** GPU capacity per node. */
  readonly nodeGpus: ReadonlyMap<string, number>;
  readonly pods: readonly PodObs[];
  readonly binds: readonly BindRecord[];
  /** Pod deletions by the replicas (a gang rolled back), same shape as bindings. */
  readonly deletes?: readonly BindRecord[];
  readonly leases: readonly LeaseRecord[];
  /** The scheduler replicas' API users → their leader-election identity. */
  readonly replicaOf: ReadonlyMap<string, string>;
  /** Gang `ns/name` → its size (a TrainingJob's replicas). */
  readonly gangSize: ReadonlyMap<string, number>;
  /** Every slot submitted. */
  readonly submittedSlots: ReadonlySet<string>;
  /** Controller owner uid → how many live children it should have at most. */
  readonly expectedChildren: ReadonlyMap<string, number>;
  /** uids of the owners that exist at the end. */
  readonly ownersAtEnd: ReadonlySet<string>;
  /** Pods at the end (a final list). */
  readonly podsAtEnd: readonly PodObs[];
  /** How long a gang may be partly bound (a binding in flight, a crashed leader's plan completed by the next). */
  readonly gangWindowMs: number;
  /** The end of the observation (bench clock, ms). */
  readonly endMs: number;
}

export interface Invariants {
  readonly halfBoundGangs: number;
  readonly doubleBinds: number;
  readonly gpuDoubleAssigned: number;
  readonly lostPods: number;
  readonly nonLeaderBinds: number;
  readonly orphans: number;
}

export interface InvariantReport {
  readonly invariants: Invariants;
  /** One line per violation, for the reader of the JSON. */
  readonly violations: readonly string[];
  /** How long gangs were partly bound (ms), every episode: the crash-recovery time of gang binding. */
  readonly partialGangMs: readonly number[];
  readonly podsBound: number;
  /** Pods deleted by a replica that did not hold the Lease (reported beside the invariants, listed in `violations`). */
  readonly nonLeaderDeletes: number;
  /** `ns/name` of every pod a GPU or capacity violation names (both sides): whose record the reader wants to see. */
  readonly involved: readonly string[];
}

const key = (ns: string, name: string): string => `${ns}/${name}`;
const parseIndices = (s: string): number[] => (s === '' ? [] : s.split(',').map(Number));

interface Live {
  name: string;
  node: string;
  gpus: number;
  indices: number[];
  terminal: boolean;
  gang: string | undefined;
  ownerUid: string | undefined;
}

/** Counts the violations of every invariant over the history (see the file comment and bench/chaos.md). */
export function checkInvariants(h: ChaosHistory): InvariantReport {
  const violations: string[] = [];
  const live = new Map<string, Live>();
  const boundUidsByName = new Map<string, Set<string>>();
  const boundSlots = new Set<string>();
  const gangState = new Map<string, { count: number; full: boolean; since: number | undefined }>();
  const partialGangMs: number[] = [];
  const halfGangs = new Set<string>();
  const duplicatedOwners = new Set<string>();
  let doubleBinds = 0;
  let gpuDouble = 0;
  let overCapacity = 0;
  const involved = new Set<string>();

  const liveOnNode = (node: string, except: string): Live[] =>
    [...live].filter(([uid, p]) => uid !== except && p.node === node && !p.terminal).map(([, p]) => p);
  const gangCount = (gang: string): number => [...live.values()].filter((p) => p.gang === gang && p.node !== '').length;
  const closeEpisode = (gang: string, st: { since: number | undefined }, t: number): void => {
    if (st.since === undefined) return;
    partialGangMs.push(t - st.since);
    if (t - st.since > h.gangWindowMs) {
      halfGangs.add(gang);
      violations.push(`gang ${gang} partly bound for ${Math.round(t - st.since)} ms (allowed ${h.gangWindowMs})`);
    }
    st.since = undefined;
  };
  const gangChanged = (gang: string, t: number): void => {
    const size = h.gangSize.get(gang) ?? 1;
    const count = gangCount(gang);
    const st = gangState.get(gang) ?? { count: 0, full: false, since: undefined };
    gangState.set(gang, st);
    st.count = count;
    if (count >= size) {
      closeEpisode(gang, st, t);
      st.full = true;
    } else if (count === 0) {
      closeEpisode(gang, st, t);
      st.full = false;
    } else if (!st.full && st.since === undefined) st.since = t;
  };
  const ownerChanged = (owner: string): void => {
    const want = h.expectedChildren.get(owner);
    if (want === undefined || duplicatedOwners.has(owner)) return;
    const have = [...live.values()].filter((p) => p.ownerUid === owner && !p.terminal).length;
    if (have > want) {
      duplicatedOwners.add(owner);
      violations.push(`owner ${owner}: ${have} live children, at most ${want} expected`);
    }
  };

  for (const o of h.pods) {
    const before = live.get(o.uid);
    if (o.type === 'DELETED') {
      live.delete(o.uid);
      if (before?.gang !== undefined) gangChanged(before.gang, o.t);
      continue;
    }
    const now: Live = { name: key(o.ns, o.name), node: o.node, gpus: o.gpus, indices: parseIndices(o.gpuIndices), terminal: o.terminal, gang: o.gang, ownerUid: o.ownerUid };
    if (before !== undefined && before.node !== '' && now.node !== before.node) {
      doubleBinds++;
      violations.push(`pod ${key(o.ns, o.name)} (${o.uid}) moved from ${before.node} to ${now.node || '(unbound)'}`);
    }
    const newlyBound = now.node !== '' && (before === undefined || before.node === '');
    const newIndices = now.node !== '' && now.indices.join(',') !== (before?.indices.join(',') ?? '');
    if (newlyBound || newIndices) {
      const others = liveOnNode(now.node, o.uid);
      if (newlyBound && !now.terminal) {
        const used = others.reduce((s, p) => s + p.gpus, 0);
        const cap = h.nodeGpus.get(now.node) ?? 0;
        if (used + now.gpus > cap) {
          overCapacity++;
          involved.add(key(o.ns, o.name));
          for (const p of others) involved.add(p.name);
          violations.push(`pod ${key(o.ns, o.name)} bound to ${now.node} with ${used} of ${cap} GPUs already held, asking ${now.gpus}`);
        }
      }
      const holders = now.terminal ? [] : others.filter((p) => p.indices.some((i) => now.indices.includes(i)));
      if (holders.length > 0) {
        gpuDouble++;
        involved.add(key(o.ns, o.name));
        for (const p of holders) involved.add(p.name);
        const clash = now.indices.filter((i) => holders.some((p) => p.indices.includes(i)));
        violations.push(`pod ${key(o.ns, o.name)} got GPU ${clash.join(',')} of ${now.node}, held by ${holders.map((p) => p.name).join(', ')}`);
      }
    }
    live.set(o.uid, now);
    if (now.node !== '') {
      const uids = boundUidsByName.get(key(o.ns, o.name)) ?? new Set<string>();
      uids.add(o.uid);
      boundUidsByName.set(key(o.ns, o.name), uids);
      if (o.slot !== undefined) boundSlots.add(o.slot);
    }
    if (now.gang !== undefined) gangChanged(now.gang, o.t);
    if (now.ownerUid !== undefined) ownerChanged(now.ownerUid);
  }
  for (const [gang, st] of gangState) closeEpisode(gang, st, h.endMs);

  // Bindings the apiserver accepted: more than one per pod object is a double binding, even if the watch missed it.
  const okBinds = new Map<string, number>();
  for (const b of h.binds) if (b.code >= 200 && b.code < 300) okBinds.set(key(b.ns, b.name), (okBinds.get(key(b.ns, b.name)) ?? 0) + 1);
  for (const [name, n] of okBinds) {
    const objects = Math.max(1, boundUidsByName.get(name)?.size ?? 0);
    if (n > objects) {
      doubleBinds += n - objects;
      violations.push(`pod ${name}: ${n} accepted bindings for ${objects} pod object(s)`);
    }
  }

  // A binding (or a pod deletion: a gang rolled back) received while the Lease's last stored holder was someone
  // else: a replica acted without leading.
  const nonLeader = notLeading(h, h.binds, 'binding', violations);
  const nonLeaderDeletes = notLeading(h, h.deletes ?? [], 'deletion', violations);

  // Lost: a submitted slot no pod of which was ever bound, or a pod still unbound at the end.
  let lost = 0;
  for (const s of h.submittedSlots)
    if (!boundSlots.has(s)) {
      lost++;
      violations.push(`slot ${s}: never bound`);
    }
  for (const p of h.podsAtEnd)
    if (p.node === '' && !p.terminal && (p.slot === undefined || boundSlots.has(p.slot))) {
      lost++;
      violations.push(`pod ${key(p.ns, p.name)} unbound at the end`);
    }

  // Orphans at the end (an owner gone, its child still there after garbage collection had its time) and owners
  // that had more live children than they ask for at any moment.
  let orphans = duplicatedOwners.size;
  for (const p of h.podsAtEnd)
    if (p.ownerUid !== undefined && !h.ownersAtEnd.has(p.ownerUid)) {
      orphans++;
      violations.push(`pod ${key(p.ns, p.name)}: its owner ${p.ownerUid} is gone`);
    }

  return {
    invariants: {
      halfBoundGangs: halfGangs.size,
      doubleBinds: doubleBinds + overCapacity,
      gpuDoubleAssigned: gpuDouble,
      lostPods: lost,
      nonLeaderBinds: nonLeader,
      orphans,
    },
    violations,
    partialGangMs,
    podsBound: boundSlots.size,
    nonLeaderDeletes,
    involved: [...involved].sort(),
  };
}

/** Writes (bindings, deletions) accepted while the Lease's last stored holder was another replica, each listed in `violations`. */
function notLeading(h: ChaosHistory, writes: readonly BindRecord[], what: string, violations: string[]): number {
  const leases = [...h.leases].sort((a, b) => a.storedMs - b.storedMs);
  let n = 0;
  for (const b of writes) {
    if (b.code < 200 || b.code >= 300) continue;
    const me = h.replicaOf.get(b.user);
    if (me === undefined) continue;
    let holder: string | undefined;
    for (const l of leases) {
      if (l.storedMs > b.receivedMs) break;
      holder = l.holder;
    }
    if (holder === me) continue;
    n++;
    violations.push(`${what} of ${key(b.ns, b.name)} by ${me} at ${new Date(b.receivedMs).toISOString()} while the lease holder was ${holder ?? '(none)'}`);
  }
  return n;
}
