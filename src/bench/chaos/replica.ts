/**
 * One scheduler replica of `sits bench chaos`: `sits run --controllers` (createLiveApp with leader election and the
 * workload controllers) with the binder's crash seam (ADR 0006) armed from the bench: stdin `arm N` → the process
 * SIGKILLs itself after N more gang-member bindings, i.e. in the middle of binding a gang. Test tooling: the product
 * has no failpoint. Argument: one JSON object (ReplicaConfig). stdout: `{"type":"ready"}` once started.
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
    if (count < crashAt) return;
    log(`failpoint: SIGKILL after gang-member binding ${count}`);
    process.kill(process.pid, 'SIGKILL');
  },
});
process.stdout.write(`${JSON.stringify({ type: 'ready', pid: process.pid })}\n`);
createInterface({ input: process.stdin })
  .on('line', (l) => {
    const m = /^arm (\d+)$/.exec(l.trim());
    if (m === null) return;
    crashAt = bound + Number(m[1]);
    log(`failpoint armed: SIGKILL at gang-member binding ${crashAt}`);
  })
  .on('close', () => void app.stop().then(() => process.exit(0)));
