/**
 * Recorded dcgm-exporter text with a fault injected: the recorded lines of a fixture with some samples'
 * values changed and, for fields the recording lacks, lines added in the same label set. Shared by the
 * health tests (core, kube adapter, e2e).
 */

/** Sets `metric{…gpu="<gpu>"…}` to `value` on every line of the text, or appends a sample with `labels` when none has it. */
export function withValue(text: string, metric: string, gpu: number, value: number, labels: string): string {
  const lines = text.split('\n');
  let hit = false;
  const out = lines.map((l) => {
    if (!l.startsWith(`${metric}{`) || !l.includes(`gpu="${gpu}"`)) return l;
    hit = true;
    return l.replace(/\}\s+\S+$/, `} ${value}`);
  });
  if (hit) return out.join('\n');
  const body = out.join('\n').replace(/\n*$/, '\n');
  return `${body}# TYPE ${metric} gauge\n${metric}{${labels}} ${value}\n`;
}

/** The label set of the T4 fixture's GPU 0 (dcgm-t4-datadog.txt), as dcgm-exporter printed it. */
export const T4_LABELS = 'gpu="0",UUID="GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e",device="nvidia0",modelName="Tesla T4",Hostname="424773df46e0",DCGM_FI_DRIVER_VERSION="460.106.00",DCGM_FI_PROCESS_NAME="/usr/bin/dcgm-exporter"';
