/**
 * The CLI's one error path: every error ends as `sits: <what>: <why> (<what to do>)` on stderr, one line per
 * problem, and a documented exit code (docs/cli-errors.md): 2 for a usage or input mistake, 1 for a runtime failure
 * (a cluster that does not answer, a port in use, a bug). The stack only with --debug.
 */
import { CommanderError } from 'commander';

/** Exit codes of `sits` (docs/cli-errors.md). */
export const EXIT = { ok: 0, runtime: 1, usage: 2 } as const;
export type ErrorExit = typeof EXIT.runtime | typeof EXIT.usage;

export interface CliErrorOptions {
  /** What to do about it; without one the line points at `--help` (usage) or `--debug` (runtime). */
  readonly hint?: string;
  /** 2 (default): the user's input or flags; 1: the world (network, ports, the cluster). */
  readonly exitCode?: ErrorExit;
  readonly cause?: unknown;
}

/** An error meant for the person at the terminal: `message` is `<what>: <why>`, printed without a stack. */
export class CliError extends Error {
  readonly code = 'CliError';
  readonly hint: string | undefined;
  readonly exitCode: ErrorExit;
  constructor(message: string, opts: CliErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'CliError';
    this.hint = opts.hint;
    this.exitCode = opts.exitCode ?? EXIT.usage;
  }
}

/** Ends a command that already printed its output with a given exit code (`sits lint`: 1 on error findings). */
export class ExitStatus extends Error {
  readonly code = 'ExitStatus';
  constructor(readonly exitCode: number) {
    super(`exit ${exitCode}`);
    this.name = 'ExitStatus';
  }
}

/** What the CLI prints for an error: its lines (without the trailing newline) and the exit code. */
export interface ErrorReport {
  readonly lines: readonly string[];
  readonly exitCode: ErrorExit;
}

interface Issue {
  readonly file: string;
  readonly line: number;
  readonly column: number;
  readonly field: string;
  readonly message: string;
}

/** Duck-typed so that this module loads nothing else (`sits --version` stays small): spec/ InputError, kube/ KubeConfigError. */
function isInputError(e: unknown): e is Error & { issues: readonly Issue[] } {
  return e instanceof Error && (e as { code?: unknown }).code === 'InvalidInput' && Array.isArray((e as { issues?: unknown }).issues);
}

function isHinted(e: unknown): e is Error & { hint: string; exitCode?: ErrorExit } {
  return e instanceof Error && (e as { code?: unknown }).code === 'KubeConfig' && typeof (e as { hint?: unknown }).hint === 'string';
}

/** One line, whatever the message holds: further lines joined by "; ". */
function oneLine(s: string): string {
  return s
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .join('; ');
}

function line(whatWhy: string, hint: string): string {
  return `sits: ${oneLine(whatWhy)} (${oneLine(hint)})`;
}

/** `<what>: <why>` for a message that may have no `what` of its own (`--a and --b go together`): the command. */
function withWhat(message: string, command: string): string {
  return /^\S.*?: \S/.test(message) ? message : `${command === '' ? 'sits' : command}: ${message}`;
}

const help = (command: string): string => `see sits ${command === '' ? '' : `${command} `}--help`;

/** Node's system errors a person can act on, by code: why, and what to do. */
const SYSTEM: Readonly<Record<string, { why: string; hint: string }>> = {
  ECONNREFUSED: { why: 'connection refused', hint: 'is the server running? check the address' },
  ECONNRESET: { why: 'connection reset by the server', hint: 'check the address and that it speaks the expected protocol' },
  ETIMEDOUT: { why: 'no answer (timed out)', hint: 'check the address and the network' },
  EHOSTUNREACH: { why: 'host unreachable', hint: 'check the address and the network' },
  ENETUNREACH: { why: 'network unreachable', hint: 'check the address and the network' },
  ENOTFOUND: { why: 'host name not found', hint: 'check the host name' },
  EAI_AGAIN: { why: 'host name lookup failed', hint: 'check the host name and DNS' },
  EADDRINUSE: { why: 'address already in use', hint: 'stop the other process or choose another port' },
  EADDRNOTAVAIL: { why: 'address not available on this machine', hint: 'choose an address of this machine' },
  ENOENT: { why: 'no such file or folder', hint: 'check the path' },
  EISDIR: { why: 'is a folder, not a file', hint: 'give a file' },
  ENOTDIR: { why: 'a part of the path is not a folder', hint: 'check the path' },
  EACCES: { why: 'permission denied', hint: 'check the permissions or choose another path' },
  EPERM: { why: 'operation not permitted', hint: 'check the permissions or choose another path' },
  EROFS: { why: 'read-only file system', hint: 'choose a writable path' },
  ENOSPC: { why: 'no space left on the device', hint: 'free some space or choose another path' },
  EMFILE: { why: 'too many open files', hint: 'raise the open-file limit (ulimit -n)' },
};

const NETWORK = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', 'EADDRINUSE', 'EADDRNOTAVAIL']);

/** A system error's subject: the address or path it names. */
function subject(e: NodeJS.ErrnoException & { address?: string; port?: number; hostname?: string }): string {
  if (e.address !== undefined) return e.port === undefined ? e.address : `${e.address}:${e.port}`;
  if (e.hostname !== undefined) return e.hostname;
  if (e.path !== undefined) return e.path;
  return e.syscall ?? 'system';
}

/** A system error (errno code), or undefined for anything else. */
export function systemErrorLine(e: unknown): { what: string; why: string; hint: string; network: boolean } | undefined {
  if (!(e instanceof Error)) return undefined;
  const x = e as NodeJS.ErrnoException;
  if (typeof x.code !== 'string') return undefined;
  const known = SYSTEM[x.code];
  if (known === undefined) return undefined;
  return { what: subject(x), why: known.why, hint: known.hint, network: NETWORK.has(x.code) };
}

/** Commander's own errors (`error: option '--seed <n>' argument 'x' is invalid. …`) in the CLI's shape. */
function commanderLine(e: CommanderError, command: string): string {
  const msg = e.message.replace(/^error: /, '');
  const [first = '', ...rest] = msg.split('\n');
  const suggestion = rest
    .join(' ')
    .trim()
    .replace(/^\((.*)\)$/, '$1');
  const hint = suggestion === '' ? help(command) : `${suggestion} ${help(command)}`;
  const where = command === '' ? '' : `${command} `;
  let m: RegExpMatchArray | null;
  // `-o, --output <format>`: the long flag names the option.
  if ((m = /^option '(?:-[^-], )?([^' ]+)[^']*' argument '(.*)' is invalid\. ?(.*)$/s.exec(first)) !== null) {
    const [, flag = '', value = '', said = ''] = m;
    const choices = /^Allowed choices are (.*)\.$/s.exec(said);
    const why = choices === null ? said : `"${value}" is not one of ${choices[1] ?? ''}`;
    const own = /^(.*) \((.*)\)$/s.exec(why);
    return own === null ? line(`${where}${flag}: ${why}`, help(command)) : line(`${where}${flag}: ${own[1] ?? ''}`, `${own[2] ?? ''}; ${help(command)}`);
  }
  if ((m = /^command-argument value '(.*)' is invalid for argument '([^']*)'\. ?(.*)$/s.exec(first)) !== null)
    return line(`${where}<${m[2] ?? ''}>: ${m[3] ?? ''}`, help(command));
  if ((m = /^unknown command '(.*)'$/.exec(first)) !== null) return line(`${m[1] ?? ''}: unknown command`, hint);
  if ((m = /^unknown option '(.*)'$/.exec(first)) !== null) return line(`${where}${m[1] ?? ''}: unknown option`, hint);
  if ((m = /^required option '(?:-[^-], )?([^' ]+)[^']*' not specified$/.exec(first)) !== null)
    return line(`${where}${m[1] ?? ''}: required option not given`, help(command));
  if ((m = /^option '(?:-[^-], )?([^' ]+)[^']*' argument missing$/.exec(first)) !== null) return line(`${where}${m[1] ?? ''}: value missing`, help(command));
  if ((m = /^missing required argument '(.*)'$/.exec(first)) !== null) return line(`${where}<${m[1] ?? ''}>: required argument missing`, help(command));
  if ((m = /^too many arguments(?: for '.*')?\. (.*)$/.exec(first)) !== null)
    return line(`${command === '' ? 'sits' : command}: too many arguments: ${m[1] ?? ''}`, help(command));
  return line(withWhat(first, command), hint);
}

/**
 * What `sits` prints for `e`: one line per problem in the shape `sits: <what>: <why> (<what to do>)`, and the exit
 * code. `command` is the command path (`bench fgd`), for the `--help` a line points at.
 */
export function reportError(e: unknown, command: string): ErrorReport {
  if (e instanceof CliError) {
    const msg = withWhat(oneLine(e.message), command);
    // A message that already says what to do in its closing parenthesis keeps it as the hint.
    const own = e.hint === undefined ? /^(.*\S) \(([^()]*(?:\([^()]*\)[^()]*)*)\)$/s.exec(msg) : null;
    if (own !== null) return { lines: [line(own[1] ?? '', own[2] ?? '')], exitCode: e.exitCode };
    return { lines: [line(msg, e.hint ?? (e.exitCode === EXIT.usage ? help(command) : 'run again with --debug for details'))], exitCode: e.exitCode };
  }
  if (isInputError(e)) {
    const lines = e.issues.map((i) =>
      line(`${i.file}:${i.line}:${i.column}: ${i.field === '' ? '' : `${i.field}: `}${i.message}`, 'fix the file; nothing was applied'),
    );
    return { lines: lines.length > 0 ? lines : [line(`input: ${e.message}`, 'fix the file')], exitCode: EXIT.usage };
  }
  if (isHinted(e)) return { lines: [line(e.message, e.hint)], exitCode: e.exitCode ?? EXIT.usage };
  if (e instanceof CommanderError) return { lines: [commanderLine(e, command)], exitCode: EXIT.usage };
  const sys = systemErrorLine(e);
  if (sys !== undefined) return { lines: [line(`${sys.what}: ${sys.why}`, sys.hint)], exitCode: sys.network ? EXIT.runtime : EXIT.usage };
  const message = e instanceof Error ? e.message : String(e);
  return { lines: [line(`internal error: ${message}`, 'run again with --debug for the stack trace, and report it')], exitCode: EXIT.runtime };
}
