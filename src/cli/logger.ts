/**
 * The one logger of the long-running commands (`sits run`, `controllers`, `webhook`, `activator`, `extender`,
 * `node-agent`): pino with levels, kube-style verbosity (`-v`, `--v=N`: 1 and up log debug, 5 and up trace) and
 * `--log-format text|json` (text by default, for people; json for a log pipeline). Both write synchronously to
 * stderr: no transport worker threads, which would not survive the esbuild bundle. The app and kube layers keep
 * their `(line: string) => void` callbacks; `line` maps them onto levels: `warning: ` / `error: ` prefixes become
 * warn / error, the rest info, and the ` trace_id=… span_id=…` that kube/telemetry/tracing.ts appends inside a span becomes
 * two fields in JSON (text keeps it at the end of the line, where it always was).
 */
import { Option, type Command } from 'commander';
import { pino, type DestinationStream, type Logger } from 'pino';
import pinoPretty from 'pino-pretty';
import { intOption } from './options.ts';

export type LogFormat = 'text' | 'json';

export interface LogOptions {
  /** `-v` alone is true; `--v=N` a number. */
  readonly v?: boolean | number;
  readonly logFormat?: LogFormat;
}

export interface SitsLogger {
  readonly pino: Logger;
  /** The `(line) => void` callback the app and kube layers take. */
  readonly line: (m: string) => void;
}

/** `-v` / `--v=N`: kube-style verbosity. */
export function verbosityOption(): Option {
  const level = intOption('--v', 0, 10);
  return new Option('-v, --v [level]', 'log verbosity, kube style: -v or --v=1 and up also log debug lines, --v=5 and up trace').argParser((s: string) =>
    level(s),
  );
}

/** `--log-format text|json`. */
export function logFormatOption(): Option {
  return new Option(
    '--log-format <format>',
    'log lines as text (for people; the default) or json (one object a line: time, level, name, msg, and trace_id/span_id inside a span)',
  )
    .choices(['text', 'json'])
    .default('text');
}

/** Both log options on a command. */
export function addLogOptions(cmd: Command): Command {
  return cmd.addOption(verbosityOption()).addOption(logFormatOption());
}

const TRACE_IDS = / trace_id=([0-9a-f]{32}) span_id=([0-9a-f]{16})$/;

/** pino level of a kube-style verbosity. */
export function levelOf(v: boolean | number | undefined): 'info' | 'debug' | 'trace' {
  const n = v === true ? 1 : v === undefined || v === false ? 0 : v;
  return n >= 5 ? 'trace' : n >= 1 ? 'debug' : 'info';
}

/** The logger of component `name` (e.g. `sits-scheduler`); `dest` (default stderr) is for tests. */
export function createLogger(name: string, o: LogOptions = {}, dest?: DestinationStream): SitsLogger {
  const level = levelOf(o.v);
  const stream: DestinationStream =
    o.logFormat === 'json'
      ? (dest ?? pino.destination({ dest: 2, sync: true }))
      : pinoPretty({
          ...(dest === undefined ? { destination: 2, sync: true } : { destination: dest }),
          colorize: dest === undefined && process.stderr.isTTY,
          singleLine: true,
          translateTime: "UTC:yyyy-mm-dd'T'HH:MM:ss.l'Z'",
          ignore: 'pid,hostname,name,trace_id,span_id',
          // The trace ids stay at the end of the text line, where tools and people found them before.
          messageFormat: (log, key) =>
            `${String(log[key])}${typeof log['trace_id'] === 'string' ? ` trace_id=${log['trace_id']} span_id=${String(log['span_id'])}` : ''}`,
        });
  const logger = pino({ name, level, base: { name }, timestamp: pino.stdTimeFunctions.isoTime }, stream);
  const line = (m: string): void => {
    const ids = TRACE_IDS.exec(m);
    const text = ids === null ? m : m.slice(0, ids.index);
    const fields = ids === null ? {} : { trace_id: ids[1], span_id: ids[2] };
    if (text.startsWith('warning: ')) logger.warn(fields, text.slice('warning: '.length));
    else if (text.startsWith('error: ')) logger.error(fields, text.slice('error: '.length));
    else logger.info(fields, text);
  };
  return { pino: logger, line };
}
