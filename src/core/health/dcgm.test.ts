import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { readDcgmMetrics } from './dcgm.ts';
import { T4_LABELS, withValue } from './testing.ts';

const fixture = (name: string): string => readFileSync(new URL(`./fixtures/${name}`, import.meta.url), 'utf8');

describe('readDcgmMetrics on recorded dcgm-exporter output', () => {
  it('T4: one device with its labels and the fields the detector reads', () => {
    const r = readDcgmMetrics(fixture('dcgm-t4-datadog.txt'));
    expect(r.ok && r.value).toEqual([
      {
        host: '424773df46e0',
        gpu: 0,
        uuid: 'GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e',
        model: 'Tesla T4',
        activeXids: [],
        pods: [],
        fields: { tempC: 25, powerW: 8.969, pcieReplayTotal: 0, lastXid: 0 },
      },
    ]);
  });

  it('V100 ×4: every device, ordered by index', () => {
    const r = readDcgmMetrics(fixture('dcgm-v100x4-issue-250.txt'));
    expect(r.ok && r.value.map((d) => [d.host, d.gpu, d.model])).toEqual([0, 1, 2, 3].map((g) => ['r6i3n0', g, 'Tesla V100-SXM2-32GB']));
  });

  it('A30 with MIG: instances fold into their GPU', () => {
    const r = readDcgmMetrics(fixture('dcgm-a30-mig-issue-317.txt'));
    expect(r.ok && r.value.map((d) => ({ gpu: d.gpu, temp: d.fields.tempC, mem: d.fields.memoryTempC }))).toEqual([
      { gpu: 0, temp: 35, mem: 35 },
      { gpu: 1, temp: 35, mem: 34 },
    ]);
  });

  it('pods on the device (Kubernetes mapping) and the lowercase hostname label of newer releases', () => {
    const r = readDcgmMetrics(fixture('dcgm-mixed-pods-pr-736.txt'));
    if (!r.ok) throw new Error(r.error);
    expect(r.value.map((d) => [d.host, d.gpu, d.model, d.pods.map((p) => `${p.namespace}/${p.pod}`)])).toEqual([
      ['dcgm-exporter-wwwjh', 0, 'NVIDIA A30', ['default/triton-server-f7cb5d77-2w5b2', 'default/triton-server-f7cb5d77-wwk9g']],
      ['dcgm-exporter-wwwjh', 1, 'NVIDIA RTX 2000 Ada Generation', []],
      ['dcgm-exporter-wwwjh', 2, 'NVIDIA A30', ['default/triton-server-f7cb5d77-95xcf']],
    ]);
  });

  it('devices whose samples carry no field the detector reads are listed with no fields (GB200 C2C and BER)', () => {
    const r = readDcgmMetrics(fixture('dcgm-gb200-issue-581.txt'));
    expect(r.ok && r.value.map((d) => [d.gpu, d.model, d.fields])).toEqual([0, 1, 2, 3].map((g) => [g, 'NVIDIA GB200', {}]));
  });

  it('active XIDs from DCGM_FI_DEV_XID_ERRORS_ACTIVE with its xid label', () => {
    const r = readDcgmMetrics(fixture('dcgm-xid-active-pr-239.txt'));
    expect(r.ok && r.value[0]?.activeXids).toEqual([42]);
  });

  it("DCGM's blank sentinel is no value, not 9e18 errors", () => {
    const t = withValue(fixture('dcgm-t4-datadog.txt'), 'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL', 0, 9.223372036854776e18, T4_LABELS);
    const r = readDcgmMetrics(t);
    expect(r.ok && r.value[0]?.fields.dbeVolTotal).toBeUndefined();
  });

  it('bad input: the parser names the line; a gpu label that is no index is named', () => {
    const bad = readDcgmMetrics('DCGM_FI_DEV_GPU_TEMP{gpu="0" 41\n');
    expect(bad.ok).toBe(false);
    expect(!bad.ok && bad.error).toMatch(/^dcgm-exporter metrics: line 1: /);
    const idx = readDcgmMetrics('DCGM_FI_DEV_GPU_TEMP{gpu="zero"} 41\n');
    expect(idx).toEqual({ ok: false, error: 'dcgm-exporter metrics: DCGM_FI_DEV_GPU_TEMP: label gpu="zero" is not a device index' });
  });
});
