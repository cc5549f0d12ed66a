import { WORKLOAD_KINDS, argTokens, cpuLimit, envOf, podSites, type ContainerSite } from '../pod-specs.ts';
import type { FieldPath, Rule, RuleHit } from '../rule.ts';

const FLAGS = new Set(['pin-memory', 'dataloader-pin-memory']);
const ENV = ['PIN_MEMORY', 'DATALOADER_PIN_MEMORY', 'SITS_DATALOADER_PIN_MEMORY'];
const TRUE = new Set(['true', '1', 'yes', 'on']);
const BOOL = new Set([...TRUE, 'false', '0', 'no', 'off']);

/** Whether the container turns pin_memory on: a boolean flag (`--pin-memory`, `--dataloader_pin_memory True`), env, or `pin_memory=True` inline. */
export function pinMemoryOn(c: ContainerSite): { readonly from: string; readonly path: FieldPath } | undefined {
  const toks = argTokens(c);
  let flag: { on: boolean; path: FieldPath } | undefined;
  for (let i = 0; i < toks.length; i++) {
    const t = toks[i];
    if (t === undefined || !t.text.startsWith('--')) continue;
    const eq = t.text.indexOf('=');
    const name = (eq < 0 ? t.text : t.text.slice(0, eq)).slice(2).toLowerCase().replace(/_/g, '-');
    if (name === 'no-pin-memory') flag = { on: false, path: t.path };
    if (!FLAGS.has(name)) continue;
    const next = toks[i + 1]?.text.toLowerCase();
    const v = eq >= 0 ? t.text.slice(eq + 1).toLowerCase() : next !== undefined && BOOL.has(next) ? next : 'true';
    flag = { on: TRUE.has(v), path: t.path };
  }
  if (flag !== undefined) return flag.on ? { from: 'the command line', path: flag.path } : undefined;
  const env = envOf(c);
  for (const n of ENV) {
    const e = env.get(n);
    if (e?.value !== undefined) return TRUE.has(e.value.trim().toLowerCase()) ? { from: `env ${n}`, path: e.valuePath } : undefined;
  }
  const inline = toks.find((t) => /pin_memory\s*=\s*True/.test(t.text));
  return inline === undefined ? undefined : { from: 'pin_memory=True in the command', path: inline.path };
}

export const pinMemoryBelowTwoCpus: Rule = {
  id: 'pin-memory-below-two-cpus',
  severity: 'warning',
  seed: '001 §1',
  title: 'DataLoader pin_memory on with a CPU limit below 2',
  rationale:
    'Pinned host memory is filled by an extra thread per loader; with a CPU limit below 2 cores it competes with the training loop for the ' +
    "only core and the CFS quota throttles both. Seed 001 §1's table turns `pin_memory` on from 2 CPUs (1 CPU → 0 workers, pin_memory " +
    'false). Read from `--pin-memory`/`--pin_memory`, `--dataloader_pin_memory True`, env `PIN_MEMORY`/`DATALOADER_PIN_MEMORY`, or ' +
    '`pin_memory=True` in an inline script; containers without a CPU limit are not judged. Turn it off or raise the CPU limit to 2.',
  kinds: WORKLOAD_KINDS,
  fixtures: {
    bad: `apiVersion: v1
kind: Pod
metadata: {name: train, namespace: ml}
spec:
  containers:
  - name: trainer
    image: pytorch/pytorch:2.3
    args: [python, train.py, --pin-memory, --epochs, "3"]
    resources: {limits: {cpu: "1", nvidia.com/gpu: 1}}
`,
    good: `apiVersion: v1
kind: Pod
metadata: {name: train, namespace: ml}
spec:
  containers:
  - name: trainer
    image: pytorch/pytorch:2.3
    args: [python, train.py, --dataloader_pin_memory, "False"]
    env: [{name: PIN_MEMORY, value: "true"}]
    resources: {limits: {cpu: "1"}}
  - name: big
    image: pytorch/pytorch:2.3
    args: [python, train.py, --pin-memory]
    resources: {limits: {cpu: "2"}}
`,
  },
  check(obj) {
    const hits: RuleHit[] = [];
    for (const s of podSites(obj)) {
      for (const c of s.containers) {
        if (c.init) continue;
        const lim = cpuLimit(c);
        if (lim === undefined || lim.milli >= 2000) continue;
        const on = pinMemoryOn(c);
        if (on === undefined) continue;
        hits.push({
          message: `pin_memory is on (${on.from}) with a CPU limit of ${lim.milli}m: the pinning thread competes with the training loop for less than two cores (seed 001 §1: pin_memory only from 2 CPUs); turn it off or raise the CPU limit to 2`,
          path: on.path,
        });
      }
    }
    return hits;
  },
};
