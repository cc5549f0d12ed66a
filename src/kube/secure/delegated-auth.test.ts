// The ReviewGate's arithmetic (ADR 0177): the unknown lane's rate and burst, the bounded queues, and known callers
// served first. The attack itself, against a real apiserver, is delegated-auth.e2e.test.ts.
import { describe, expect, it } from 'vitest';
import { AuthOverloaded, ReviewGate, routeOf } from './delegated-auth.ts';

const never = (): Promise<void> => new Promise(() => undefined);

describe('ReviewGate', () => {
  it('lets `burst` unknown reviews through at once, then `perSecond`; the rest are refused at once', async () => {
    let t = 0;
    const gate = new ReviewGate({ perSecond: 10, burst: 5, maxInFlight: 100, maxQueued: 100 }, () => t);
    const ok = (): Promise<string> => gate.run('unknown', () => Promise.resolve('ok'));
    const first = await Promise.allSettled(Array.from({ length: 20 }, ok));
    expect(first.filter((r) => r.status === 'fulfilled')).toHaveLength(5);
    expect(first.filter((r) => r.status === 'rejected' && r.reason instanceof AuthOverloaded)).toHaveLength(15);
    t = 1000;
    const second = await Promise.allSettled(Array.from({ length: 20 }, ok));
    expect(second.filter((r) => r.status === 'fulfilled')).toHaveLength(5); // refilled to the burst, not 10
    t = 1300;
    const third = await Promise.allSettled(Array.from({ length: 20 }, ok));
    expect(third.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    // Known callers are not rate-limited.
    const known = await Promise.allSettled(Array.from({ length: 20 }, () => gate.run('known', () => Promise.resolve(1))));
    expect(known.every((r) => r.status === 'fulfilled')).toBe(true);
    expect(gate.stats).toEqual({ sent: 33, refused: 47, sentKnown: 20 });
  });

  it('bounds the queue per lane and hands a freed slot to a known caller first', async () => {
    const gate = new ReviewGate({ perSecond: 1000, burst: 1000, maxInFlight: 1, maxQueued: 2 });
    let release: () => void = () => undefined;
    const holding = gate.run('unknown', () => new Promise<void>((r) => (release = r)));
    const order: string[] = [];
    const u1 = gate.run('unknown', () => Promise.resolve(order.push('u1')));
    const u2 = gate.run('unknown', () => Promise.resolve(order.push('u2')));
    await expect(gate.run('unknown', never)).rejects.toThrow(/2 reviews already waiting/);
    const k1 = gate.run('known', () => Promise.resolve(order.push('k1')));
    release();
    await Promise.all([holding, u1, u2, k1]);
    expect(order).toEqual(['k1', 'u1', 'u2']);
  });

  it('refuses limits below 1, naming the field', () => {
    expect(() => new ReviewGate({ perSecond: 0 })).toThrow(/perSecond must be at least 1/);
  });
});

describe('routeOf', () => {
  it('maps a path to the exact route or the prefix pattern it falls under; anything else is no route', () => {
    const paths = ['/metrics', '/dashboard', '/dashboard/*'];
    expect(routeOf(paths, '/metrics')).toBe('/metrics');
    expect(routeOf(paths, '/metrics/x')).toBeUndefined();
    expect(routeOf(paths, '/dashboard')).toBe('/dashboard');
    expect(routeOf(paths, '/dashboard/app.js')).toBe('/dashboard/*');
    expect(routeOf(paths, '/dashboardx')).toBeUndefined();
    expect(routeOf(paths, '/random-1234')).toBeUndefined();
  });
});
