import { describe, expect, it } from 'vitest';
import { runSits } from '../testing/sits-cli.ts';

describe('sits activator', () => {
  it('--help names the hold and TLS flags', async () => {
    const r = await runSits(['activator', '--help']);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/--hold-timeout/);
    expect(r.out).toMatch(/--tls-cert-file/);
    expect(r.out).toMatch(/--api-audiences/);
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
