/**
 * Test seam for crash safety (ADR 0006): the live scheduler with a binder hook that kills the process after
 * N gang-member bindings, leaving a gang half-bound for the next leader to complete. Test-only: the product
 * (`sits run`) has no failpoint. Run as `node --import tsx crashing-scheduler.ts KUBECONFIG IDENTITY N`.
 */
import { createLiveApp } from '../app/live.ts';

const [kubeconfig, identity, n] = process.argv.slice(2);
const crashAfter = Number(n);
if (kubeconfig === undefined || identity === undefined || !Number.isInteger(crashAfter) || crashAfter < 1) {
  process.stderr.write('usage: crashing-scheduler.ts KUBECONFIG IDENTITY CRASH_AFTER_GANG_BINDS\n');
  process.exit(2);
}
const log = (m: string): void => void process.stderr.write(`${new Date().toISOString()} ${m}\n`);
await createLiveApp({
  kubeconfig,
  identity,
  leaseNamespace: 'kube-system',
  leaseDurationSec: 4,
  log,
  afterGangMemberBound: (count) => {
    if (count < crashAfter) return;
    log(`failpoint: crashing after ${count} gang bindings`);
    process.kill(process.pid, 'SIGKILL');
  },
});
log('sits-scheduler running (crash test seam)');
