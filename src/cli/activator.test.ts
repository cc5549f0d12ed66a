import { describe, expect, it } from 'vitest';
import { runSits } from '../testing/sits-cli.ts';
import { activatorBudgetFlags } from './commands/activator.ts';

describe('sits activator', () => {
  it('--help names the hold and TLS flags', async () => {
    const r = await runSits(['activator', '--help']);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/--hold-timeout/);
    expect(r.out).toMatch(/--tls-cert-file/);
    expect(r.out).toMatch(/--api-audiences/);
    expect(r.out).toMatch(/--max-held-bytes/);
    expect(r.out).toMatch(/--max-held-requests/);
  });

  it('derives the budget from the memory limit, and names the flag that cannot work', async () => {
    const none = { PATH: '' };
    expect(activatorBudgetFlags({ memoryLimit: 512 << 20 }, none)).toEqual({
      maxHeldBytes: 256 << 20,
      maxHeldRequests: 8192,
      maxHeldPerService: 1000,
      maxBodyBytes: 16 << 20,
      memoryLimitBytes: 512 << 20,
    });
    expect(activatorBudgetFlags({}, { SITS_MEMORY_LIMIT: String(128 << 20) })).toMatchObject({
      maxHeldBytes: 64 << 20,
      maxBodyBytes: 16 << 20,
      maxHeldRequests: 2048,
    });
    expect(activatorBudgetFlags({ maxHeldBytes: 8 << 20 }, none)).toMatchObject({ maxHeldBytes: 8 << 20, maxBodyBytes: 2 << 20 });
    expect(() => activatorBudgetFlags({ maxHeldBytes: 32 << 20, maxBodyBytes: 32 << 20 }, none)).toThrow(
      /^--max-body-bytes: 33554432 is over one namespace's share of maxHeldBytes/,
    );
    expect(() => activatorBudgetFlags({}, { SITS_MEMORY_LIMIT: '1Gi' })).toThrow(/SITS_MEMORY_LIMIT: "1Gi" is not a positive number of bytes/);
    const bad = await runSits(['activator', '--insecure-localhost', '--max-held-bytes', 'lots']);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/--max-held-bytes.*"lots" is not a number of bytes/);
    const clash = await runSits(['activator', '--insecure-localhost', '--max-held-bytes', '32Mi', '--max-body-bytes', '32Mi']);
    expect(clash.code).toBe(2);
    expect(clash.err).toMatch(/--max-body-bytes: 33554432 is over one namespace's share/);
  });

  it('bad flags are clear errors with exit code 2, before any API server is asked', async () => {
    const noTls = await runSits(['activator']);
    expect(noTls.code).toBe(2);
    expect(noTls.err).toMatch(/--tls-cert-file and --tls-private-key-file are needed/);
    const half = await runSits(['activator', '--tls-private-key-file', 'k.pem']);
    expect(half.err).toMatch(/go together/);
    const missing = await runSits(['activator', '--tls-cert-file', '/nonexistent/c.pem', '--tls-private-key-file', '/nonexistent/k.pem']);
    expect(missing.code).toBe(2);
    expect(missing.err).toMatch(/--tls-cert-file \/nonexistent\/c\.pem: ENOENT/);
    const hold = await runSits(['activator', '--insecure-localhost', '--hold-timeout', '0']);
    expect(hold.code).toBe(2);
    expect(hold.err).toMatch(/--hold-timeout/);
    const aud = await runSits(['activator', '--insecure-localhost', '--api-audiences', 'sits-activator,,x']);
    expect(aud.code).toBe(2);
    expect(aud.err).toMatch(/--api-audiences: want comma-separated audiences/);
  });
});
