// The tracing flag of `sits run` and `sits dev up`: a bad endpoint is refused before anything starts,
// naming the flag or the variable.
import { describe, expect, it } from 'vitest';
import { runSits } from '../testing/sits-cli.ts';

describe('tracing configuration on the command line', () => {
  it('sits run refuses an --otlp-endpoint that is not an http(s) URL, and so does sits dev up (the protocol and variables: kube/telemetry/tracing.test.ts)', async () => {
    const flag = await runSits(['run', '--otlp-endpoint', 'localhost:4318', '--metrics-port', '0']);
    expect(flag.code).not.toBe(0);
    expect(flag.err).toContain('--otlp-endpoint: "localhost:4318" must be an http:// or https:// URL (OTLP/HTTP)');
    const dev = await runSits(['dev', 'up', '--otlp-endpoint', 'not a url']);
    expect(dev.code).not.toBe(0);
    expect(dev.err).toContain('--otlp-endpoint: "not a url" is not a URL');
  });
});
