/**
 * Loaders for the Philly-derived traces of Pollux (OSDI '21), ../shared/traces/pollux-philly:
 * - `philly.csv` (`timestamp,duration,num_gpus,gpu_time,cluster`): one job per row, submitted at its
 *   timestamp (UTC) and running `duration` seconds on `num_gpus` GPUs;
 * - `workload-N.csv` (`name,time,application,num_replicas,batch_size`): 160 jobs in an 8-hour window; the
 *   file has no duration, so one is derived from the GPU-time class the generator mapped to each
 *   application (`simulator/workload.py`): cifar10/ncf < 1 GPU-h, deepspeech2/bert 1–10, yolov3 10–100,
 *   imagenet 100–1000; we take the geometric middle of the class (0.3, 3.2, 32, 320 GPU-hours; cifar10/ncf
 *   use 0.3 because the generator keeps only jobs ≥ 60 s) divided by the replicas. An assumption, stated.
 * Errors name the file, line and field.
 */
import { intField, numField, parseCsv, requireColumns, textField } from './csv.ts';
import { TraceError } from './errors.ts';

export interface TraceJob {
  readonly name: string;
  /** Submission, seconds from the trace's first job (philly.csv) or from the window start (workload-N). */
  readonly submitS: number;
  readonly durationS: number;
  readonly gpus: number;
  /** Virtual cluster (philly.csv) or application (workload-N). */
  readonly group: string;
  readonly line: number;
}

const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})$/;

export function parsePhillyJobs(text: string, file: string): TraceJob[] {
  const t = parseCsv(text, file);
  const [cTs, cDur, cGpus, cCluster] = requireColumns(t, ['timestamp', 'duration', 'num_gpus', 'cluster']) as [number, number, number, number];
  const raw = t.rows.map((row) => {
    const ts = textField(t, row, cTs);
    const m = TIMESTAMP.exec(ts);
    if (m === null) throw new TraceError('BadValue', file, row.line, 'timestamp', `expected "YYYY-MM-DD HH:MM:SS", got ${JSON.stringify(ts)}`);
    const at = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6])) / 1000;
    if (!Number.isFinite(at)) throw new TraceError('BadValue', file, row.line, 'timestamp', `not a date: ${ts}`);
    return { at, durationS: numField(t, row, cDur), gpus: intField(t, row, cGpus, { min: 1, max: 4096 }), group: textField(t, row, cCluster), line: row.line };
  });
  if (raw.length === 0) throw new TraceError('Empty', file, 1, undefined, 'no jobs');
  let origin = Number.POSITIVE_INFINITY;
  for (const r of raw) origin = Math.min(origin, r.at);
  return raw.map((r) => ({ name: `philly-${r.line}`, submitS: r.at - origin, durationS: r.durationS, gpus: r.gpus, group: r.group, line: r.line }));
}

/** GPU-hours assumed per application (see the file comment). */
export const POLLUX_GPU_HOURS: Readonly<Record<string, number>> = { cifar10: 0.3, ncf: 0.3, deepspeech2: 3.2, bert: 3.2, yolov3: 32, imagenet: 320 };

export function parsePolluxWorkload(text: string, file: string): TraceJob[] {
  const t = parseCsv(text, file);
  const [cName, cTime, cApp, cReplicas] = requireColumns(t, ['name', 'time', 'application', 'num_replicas']) as [number, number, number, number];
  const jobs = t.rows.map((row) => {
    const app = textField(t, row, cApp);
    const hours = POLLUX_GPU_HOURS[app];
    if (hours === undefined)
      throw new TraceError(
        'BadValue',
        file,
        row.line,
        'application',
        `unknown application ${JSON.stringify(app)} (known: ${Object.keys(POLLUX_GPU_HOURS).join(', ')})`,
      );
    const gpus = intField(t, row, cReplicas, { min: 1, max: 4096 });
    return { name: textField(t, row, cName), submitS: numField(t, row, cTime), durationS: (hours * 3600) / gpus, gpus, group: app, line: row.line };
  });
  if (jobs.length === 0) throw new TraceError('Empty', file, 1, undefined, 'no jobs');
  return jobs;
}
