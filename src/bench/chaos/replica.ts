/**
 * One scheduler replica of `sits bench chaos`: `sits run --controllers` (createLiveApp with leader election and the
 * workload controllers) with the binder's crash seam (ADR 0006) armed from the bench: stdin `arm N` → the process
 * SIGKILLs itself after N more gang-member bindings, i.e. in the middle of binding a gang; `pause N` → it SIGSTOPs
 * itself there instead (the bench resumes it once the other replica has taken over: a leader waking up mid-gang).
 * Test tooling: the product has no failpoint. Argument: one JSON object (ReplicaConfig). stdout: `{"type":"ready"}` once started.
 */
import { createInterface } from 'node:readline';
import { createLiveApp } from '../../app/live.ts';

export interface ReplicaConfig {
  readonly kubeconfig: string;
  readonly identity: string;
  readonly leaseDurationSec: number;
}

const cfg = JSON.parse(process.argv[2] ?? '{}') as ReplicaConfig;
const log = (m: string): void => void process.stderr.write(`${new Date().toISOString()} ${cfg.identity} ${m}\n`);
let crashAt = Number.POSITIVE_INFINITY;
let pauseAt = Number.POSITIVE_INFINITY;
let bound = 0;
const app = await createLiveApp({
  kubeconfig: cfg.kubeconfig,
  identity: cfg.identity,
  leaseNamespace: 'kube-system',
  leaseDurationSec: cfg.leaseDurationSec,
  controllers: true,
  log,
  afterGangMemberBound: (count) => {
    bound = count;
    if (count >= pauseAt) {
      pauseAt = Number.POSITIVE_INFINITY;
      log(`failpoint: SIGSTOP after gang-member binding ${count}`);
      process.kill(process.pid, 'SIGSTOP');
      log('failpoint: resumed');
    }
    if (count < crashAt) return;
    log(`failpoint: SIGKILL after gang-member binding ${count}`);
    process.kill(process.pid, 'SIGKILL');
  },
});
process.stdout.write(`${JSON.stringify({ type: 'ready', pid: process.pid })}\n`);
createInterface({ input: process.stdin })
  .on('line', (l) => {
    const m = /^(arm|pause) (\d+)$/.exec(l.trim());
    if (m === null) return;
    if (m[1] === 'arm') crashAt = bound + Number(m[2]);
    else pauseAt = bound + Number(m[2]);
    log(`failpoint armed: ${m[1] === 'arm' ? 'SIGKILL' : 'SIGSTOP'} at gang-member binding ${bound + Number(m[2])}`);
  })
  .on('close', () => void app.stop().then(() => process.exit(0)));
