/**
 * Recorded dcgm-exporter text with a fault injected: the recorded lines of a fixture with some samples'
 * values changed and, for fields the recording lacks, lines added in the same label set. Shared by the
 * health tests (core, kube adapter, e2e).
 */

/**
 * Sets `metric{…gpu="<gpu>"…}` to `value` on every line of the text; when no line has it, adds a sample with
 * `labels` after the family's last sample (another GPU's), or as a new family at the end.
 */
export function withValue(text: string, metric: string, gpu: number, value: number, labels: string): string {
  const lines = text.replace(/\n*$/, '').split('\n');
  let hit = false;
  let lastOfFamily = -1;
  const out = lines.map((l, i) => {
    if (!l.startsWith(`${metric}{`)) return l;
    lastOfFamily = i;
    if (!l.includes(`gpu="${gpu}"`)) return l;
    hit = true;
    return l.replace(/\}\s+\S+$/, `} ${value}`);
  });
  const sample = `${metric}{${labels}} ${value}`;
  if (!hit && lastOfFamily >= 0) out.splice(lastOfFamily + 1, 0, sample);
  else if (!hit) out.push(`# TYPE ${metric} gauge`, sample);
  return `${out.join('\n')}\n`;
}

/** The label set of the T4 fixture's GPU 0 (dcgm-t4-datadog.txt), as dcgm-exporter printed it. */
export const T4_LABELS =
  'gpu="0",UUID="GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e",device="nvidia0",modelName="Tesla T4",Hostname="424773df46e0",DCGM_FI_DRIVER_VERSION="460.106.00",DCGM_FI_PROCESS_NAME="/usr/bin/dcgm-exporter"';
