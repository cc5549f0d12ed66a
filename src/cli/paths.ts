/**
 * Files the CLI reads and writes, checked the way a person needs: an input that is missing, a folder or binary
 * says so; an output is checked before any long work starts (issue 31: `demo --json /nonexistent/dir/x.json`
 * failed only after the whole run), and never with a recursive mkdir on a path like /proc/x, which spins in Node.
 */
import { closeSync, mkdirSync, openSync, readFileSync, rmSync, statSync, type Stats } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { utf8Text } from '../core/utf8-text.ts';
import { CliError } from './errors.ts';

function statOf(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

/** A few words and Node's code for an errno error (`permission denied (EACCES)`). */
function why(e: unknown): string {
  const x = e as NodeJS.ErrnoException;
  const words: Readonly<Record<string, string>> = {
    EACCES: 'permission denied',
    EPERM: 'operation not permitted',
    EROFS: 'read-only file system',
    ENOENT: 'not possible there',
    ENOSPC: 'no space left',
    ENOTDIR: 'a part of the path is not a folder',
    EISDIR: 'is a folder',
  };
  return x.code === undefined ? x.message : `${words[x.code] ?? x.message} (${x.code})`;
}

/** The text of an input file given by `flag` (`--workload`); a CliError (exit 2) that says what is wrong. */
export function readInput(file: string, what: string, flag?: string): string {
  const label = flag === undefined ? file : `${flag} ${file}`;
  const st = statOf(file);
  if (st === undefined) throw new CliError(`${label}: no such file`, { hint: `check the path of the ${what} file` });
  if (st.isDirectory()) throw new CliError(`${label}: is a folder, not a file`, { hint: `give the ${what} YAML file itself` });
  let buf: Buffer;
  try {
    buf = readFileSync(file);
  } catch (e) {
    throw new CliError(`${label}: cannot read the ${what} file: ${why(e)}`, { hint: 'check its permissions' });
  }
  const r = utf8Text(buf);
  if ('binaryAt' in r)
    throw new CliError(`${label}: not a ${what} file: binary data${r.binaryAt > 0 ? ` (a NUL byte at offset ${r.binaryAt})` : ' (not UTF-8 text)'}`, {
      hint: `give the ${what} YAML file`,
    });
  return buf.toString('utf8');
}

/**
 * Checks that `file` (given by `flag`) can be written, before the work that produces it: its folder exists and the
 * file can be opened for writing. Leaves no file behind when there was none.
 */
export function checkOutputFile(flag: string, file: string): void {
  const path = resolve(file);
  const label = `${flag} ${file}`;
  const st = statOf(path);
  if (st?.isDirectory() === true) throw new CliError(`${label}: is a folder`, { hint: 'give a file name, e.g. out.json' });
  const dir = dirname(path);
  const d = statOf(dir);
  if (d === undefined) throw new CliError(`${label}: folder ${dir} does not exist`, { hint: 'create it first or choose another path' });
  if (!d.isDirectory()) throw new CliError(`${label}: ${dir} is not a folder`, { hint: 'choose another path' });
  try {
    closeSync(openSync(path, 'a'));
  } catch (e) {
    throw new CliError(`${label}: cannot write: ${why(e)}`, { hint: 'choose a writable path' });
  }
  if (st === undefined) rmSync(path, { force: true });
}

/**
 * Makes sure `dir` (given by `flag`) is a folder this process can write in, creating it (and missing parents) one
 * level at a time. A recursive mkdir is what spins at 100 % CPU under /proc (issue 31).
 */
export function prepareOutputDir(flag: string, dir: string): string {
  const path = resolve(dir);
  const label = `${flag} ${dir}`;
  const missing: string[] = [];
  let at = path;
  let st = statOf(at);
  while (st === undefined && dirname(at) !== at) {
    missing.unshift(at);
    at = dirname(at);
    st = statOf(at);
  }
  if (st !== undefined && !st.isDirectory())
    throw new CliError(`${label}: ${at === path ? 'is a file, not a folder' : `${at} is a file, not a folder`}`, {
      hint: 'give a folder path; it is created if missing',
    });
  for (const m of missing) {
    try {
      mkdirSync(m);
    } catch (e) {
      throw new CliError(`${label}: cannot create folder ${m}: ${why(e)}`, { hint: 'choose a writable path' });
    }
  }
  // Writable, on a file system that holds files (not /proc, not read-only): one probe file, removed at once.
  const probe = join(path, `.sits-write-check-${process.pid}`);
  try {
    closeSync(openSync(probe, 'w'));
    rmSync(probe, { force: true });
  } catch (e) {
    throw new CliError(`${label}: cannot write in it: ${why(e)}`, { hint: 'choose a writable folder' });
  }
  return path;
}
