import { describe, expect, it } from 'vitest';
import { runSits } from '../testing/sits-cli.ts';

describe('sits extender', () => {
  it('--help names the TLS and plan flags', async () => {
    const r = await runSits(['extender', '--help']);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/--gang-plan-ttl/);
    expect(r.out).toMatch(/--client-ca-file/);
  });

  it('bad flags are clear errors with exit code 2, before any API server is asked', async () => {
    const noTls = await runSits(['extender']);
    expect(noTls.code).toBe(2);
    expect(noTls.err).toMatch(/--tls-cert-file and --tls-private-key-file are needed/);
    const half = await runSits(['extender', '--tls-cert-file', 'x.pem']);
    expect(half.err).toMatch(/go together/);
    const missing = await runSits(['extender', '--tls-cert-file', '/nonexistent/c.pem', '--tls-private-key-file', '/nonexistent/k.pem']);
    expect(missing.code).toBe(2);
    expect(missing.err).toMatch(/--tls-cert-file \/nonexistent\/c\.pem: ENOENT/);
    const prefix = await runSits(['extender', '--insecure-localhost', '--path-prefix', 'sits']);
    expect(prefix.err).toMatch(/--path-prefix: want a path starting with \//);
  });
});
