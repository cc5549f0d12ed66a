import { describe, expect, it } from 'vitest';
import { leaderVerdict } from './scheduler-watch.ts';

const T = Date.parse('2026-12-06T10:00:00Z');
const lease = (holder: string, renewedAgoSec: number, durationSec = 15) => ({
  spec: { holderIdentity: holder, leaseDurationSeconds: durationSec, renewTime: new Date(T - renewedAgoSec * 1000).toISOString() },
});

describe('whether the scheduler has a leader', () => {
  it('a held Lease is fine until it has been expired for one more lease duration', () => {
    expect(leaderVerdict(lease('sits-a', 5), 'ns/l', T, T - 600_000).down).toBe(false);
    // Expired 15 s ago (renewed 30 s ago, 15 s duration): a failover may still be under way.
    expect(leaderVerdict(lease('sits-a', 30), 'ns/l', T, T - 600_000).down).toBe(false);
    const v = leaderVerdict(lease('sits-a', 31), 'ns/l', T, T - 600_000);
    expect(v).toMatchObject({ down: true, lastHolder: 'sits-a', sinceMs: T - 16_000 });
    expect(v.down && v.message).toBe(
      'no scheduler replica has held the Lease ns/l since 2026-12-06T09:59:44.000Z (last holder sits-a): this pod waits for a scheduler that is not running',
    );
  });
  it("the lease duration is the Lease's own", () => {
    expect(leaderVerdict(lease('sits-a', 100, 60), 'ns/l', T, 0).down).toBe(false);
    expect(leaderVerdict(lease('sits-a', 121, 60), 'ns/l', T, 0).down).toBe(true);
  });
  it('a released Lease (a clean stop) counts from its last renewal, and names no holder', () => {
    const v = leaderVerdict(lease('', 16), 'ns/l', T, 0);
    expect(v).toMatchObject({ down: true, lastHolder: undefined, sinceMs: T - 16_000 });
    expect(v.down && v.message).toContain('(released)');
  });
  it('no Lease at all: down once this watch has seen none for a default duration', () => {
    expect(leaderVerdict(undefined, 'ns/l', T, T - 10_000).down).toBe(false);
    const v = leaderVerdict(undefined, 'ns/l', T, T - 16_000);
    expect(v.down && v.message).toContain('the Lease ns/l does not exist');
  });
});
