import { describe, expect, it } from 'vitest';
import { budgetFromMemory, checkLimits, detectMemoryLimit, HoldBudget, type BudgetLimits, type Refusal, type Ticket } from './activator-budget.ts';

const MiB = 1 << 20;
const limits = (o: Partial<BudgetLimits> = {}): BudgetLimits => ({
  maxHeldRequests: 8,
  maxHeldPerService: 100,
  maxHeldBytes: 100 * MiB,
  maxBodyBytes: 16 * MiB,
  namespaceShare: 0.5,
  reserve: 0.25,
  ...o,
});
const ok = (t: Ticket | Refusal): Ticket => {
  if (!('release' in t)) throw new Error(`refused: ${t.message}`);
  return t;
};
const refusal = (t: Ticket | Refusal): Refusal => {
  if ('release' in t) throw new Error('admitted');
  return t;
};

describe('activator budget', () => {
  it('derives its defaults from the memory limit: half for bodies, 64 KiB per held request', () => {
    const b = budgetFromMemory(512 * MiB);
    expect(b).toMatchObject({ maxHeldBytes: 256 * MiB, maxHeldRequests: 8192, maxHeldPerService: 1000, maxBodyBytes: 16 * MiB });
    expect(() => checkLimits(b)).not.toThrow();
    // A small container: bodies shrink to a quarter of the byte budget, so one service can still hold two.
    expect(budgetFromMemory(64 * MiB)).toMatchObject({ maxHeldBytes: 32 * MiB, maxBodyBytes: 8 * MiB, maxHeldRequests: 1024 });
  });

  it('finds the memory limit in SITS_MEMORY_LIMIT, else the cgroup, and names a bad value', () => {
    const none = (): string => {
      throw new Error('ENOENT');
    };
    expect(detectMemoryLimit({ SITS_MEMORY_LIMIT: '536870912' }, none)).toBe(512 * MiB);
    expect(() => detectMemoryLimit({ SITS_MEMORY_LIMIT: '512Mi' }, none)).toThrow(/SITS_MEMORY_LIMIT: "512Mi" is not a positive number of bytes/);
    expect(detectMemoryLimit({}, (p) => (p === '/sys/fs/cgroup/memory.max' ? '268435456\n' : none()))).toBe(256 * MiB);
    expect(detectMemoryLimit({}, (p) => (p === '/sys/fs/cgroup/memory.max' ? 'max\n' : none()))).toBeUndefined();
    expect(detectMemoryLimit({}, (p) => (p === '/sys/fs/cgroup/memory/memory.limit_in_bytes' ? '9223372036854771712' : none()))).toBeUndefined();
    expect(detectMemoryLimit({}, none)).toBeUndefined();
    // The downward API gives the node's memory when the pod sets no limit: the cgroup's, when smaller, wins.
    expect(detectMemoryLimit({ SITS_MEMORY_LIMIT: String(64 * 1024 * MiB) }, (p) => (p === '/sys/fs/cgroup/memory.max' ? '536870912' : none()))).toBe(
      512 * MiB,
    );
    expect(detectMemoryLimit({ SITS_MEMORY_LIMIT: String(256 * MiB) }, (p) => (p === '/sys/fs/cgroup/memory.max' ? '536870912' : none()))).toBe(256 * MiB);
  });

  it('names the field of limits that cannot work together', () => {
    expect(() => checkLimits(limits({ maxBodyBytes: 60 * MiB }))).toThrow(/^maxBodyBytes: .* over one namespace's share/);
    expect(() => checkLimits(limits({ namespaceShare: 0 }))).toThrow(/^namespaceShare/);
    expect(() => checkLimits(limits({ maxHeldRequests: 0 }))).toThrow(/^maxHeldRequests/);
  });

  it('refuses a declared body over the limit or over the budget before a byte is read, and counts it whole', () => {
    const b = new HoldBudget(limits());
    expect(refusal(b.admit('a/x', 16 * MiB + 1))).toMatchObject({ reason: 'body-too-large', status: 413 });
    const t = ok(b.admit('a/x', 16 * MiB));
    expect(b.bytesUsed()).toBe(16 * MiB);
    expect(b.bytesUsed('a/x')).toBe(16 * MiB);
    t.release();
    t.release();
    expect(b.bytesUsed()).toBe(0);
  });

  it('holds one namespace to its share, and keeps the reserve for namespaces that hold nothing', () => {
    const b = new HoldBudget(limits());
    const flood: Ticket[] = [];
    // One tenant, two services: the share is the namespace's.
    for (const svc of ['a/x', 'a/x2', 'a/x']) flood.push(ok(b.admit(svc, 16 * MiB)));
    // 48 MiB held in namespace a; a 4th 16 MiB would pass its 50 MiB share, whichever service it is for.
    expect(refusal(b.admit('a/x3', 16 * MiB))).toMatchObject({
      reason: 'namespace-share',
      status: 429,
      message: 'namespace a already buffers 50331648 body bytes, its share is 52428800',
    });
    expect(b.bytesUsed('a/x')).toBe(32 * MiB);
    flood.push(ok(b.admit('b/y', 16 * MiB)), ok(b.admit('b/y2', 8 * MiB)));
    // 72 of 100 MiB: namespace b already holds, and 75 MiB is where the reserve begins.
    expect(refusal(b.admit('b/y3', 4 * MiB))).toMatchObject({
      reason: 'namespace-share',
      message: expect.stringMatching(/kept for namespaces that hold nothing/),
    });
    // A newcomer's first request may use the reserve…
    const first = ok(b.admit('c/z', 16 * MiB));
    // …until the whole budget is gone: then everyone gets a 503.
    expect(b.bytesUsed()).toBe(88 * MiB);
    expect(refusal(b.admit('d/w', 16 * MiB))).toMatchObject({ reason: 'activator-full', status: 503 });
    first.release();
    for (const t of flood) t.release();
    expect(b.bytesUsed()).toBe(0);
    expect(b.bytesUsed('a/x')).toBe(0);
  });

  it('counts a chunked body as it arrives and cuts it off at the request limit or the budget', () => {
    const b = new HoldBudget(limits({ maxHeldBytes: 40 * MiB, maxBodyBytes: 16 * MiB, namespaceShare: 1, reserve: 0 }));
    const big = ok(b.admit('a/x'));
    for (let i = 0; i < 16; i++) expect(big.grow(MiB)).toBeUndefined();
    expect(big.grow(1)).toMatchObject({ reason: 'body-too-large', status: 413 });
    expect(big.bytes).toBe(16 * MiB);
    const other = ok(b.admit('a/x', 16 * MiB));
    const third = ok(b.admit('b/y'));
    for (let i = 0; i < 8; i++) expect(third.grow(MiB)).toBeUndefined();
    expect(third.grow(MiB)).toMatchObject({ reason: 'activator-full', status: 503 });
    for (const t of [big, other, third]) t.release();
    expect(b.bytesUsed()).toBe(0);
  });

  it('caps held requests per service, per namespace and across namespaces, with the same reserve', () => {
    const b = new HoldBudget(limits({ maxHeldRequests: 8, maxHeldPerService: 3, maxHeldBytes: 100 * MiB }));
    const x = ['a/x', 'a/x', 'a/x', 'a/x', 'a/x2', 'a/x2'].map((svc) => ok(b.admit(svc)));
    for (const t of x.slice(0, 3)) expect(t.hold()).toBeUndefined();
    expect(x[3]?.hold()).toMatchObject({ reason: 'service-held-requests', status: 429, message: '3 requests already wait for a replica of a/x' });
    expect(x[4]?.hold()).toBeUndefined();
    // Half of the 8 for one namespace.
    expect(x[5]?.hold()).toMatchObject({ reason: 'namespace-held-requests', status: 429, message: '4 requests of namespace a already wait for a replica' });
    const y = ['b/y', 'b/y', 'b/y'].map((svc) => ok(b.admit(svc)));
    expect(y[0]?.hold()).toBeUndefined();
    expect(y[1]?.hold()).toBeUndefined();
    // 6 of 8 held, the reserve's edge (8 × 0.75): namespace b already holds, so its third waits for others first.
    expect(y[2]?.hold()).toMatchObject({ reason: 'namespace-held-requests', message: expect.stringMatching(/kept for namespaces that hold nothing/) });
    const c = ok(b.admit('c/z'));
    expect(c.hold()).toBeUndefined();
    const d = ok(b.admit('d/w'));
    expect(d.hold()).toBeUndefined();
    const e = ok(b.admit('e/v'));
    expect(e.hold()).toMatchObject({ reason: 'held-requests', status: 503 });
    expect(b.heldNow()).toBe(8);
    x[0]?.unhold();
    expect(b.heldNow()).toBe(7);
    expect(b.heldNow('a/x')).toBe(2);
    for (const t of [...x, ...y, c, d, e]) t.release();
    expect(b.heldNow()).toBe(0);
    expect(b.heldNow('a/x')).toBe(0);
  });
});
