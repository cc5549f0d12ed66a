/**
 * The SITS image for tests, as users get it: built by `scripts/image.mjs` (what `npm run image` runs) in a child
 * process, unpacked by umoci into a root filesystem, and run there with chroot as the image's user, with the image's
 * environment only and a read-only root (a private mount namespace: the root bind-mounted read-only, a tmpfs on
 * /tmp as the chart's emptyDir). Needs root (CI and these machines run as root).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

export interface Run {
  readonly code: number | null;
  readonly out: string;
  readonly err: string;
}

export function run(cmd: string, args: readonly string[], opts: { readonly env?: NodeJS.ProcessEnv; readonly cwd?: string } = {}): Promise<Run> {
  return new Promise((res, rej) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env: opts.env ?? process.env, cwd: opts.cwd ?? REPO_ROOT });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.on('error', rej);
    child.on('close', (code) => res({ code, out, err }));
  });
}

/** `node scripts/image.mjs --layout DIR --out FILE`; resolves to the manifest digest it prints last. */
export async function buildImage(ociBin: string, layout: string, out: string): Promise<string> {
  const r = await run(process.execPath, [join(REPO_ROOT, 'scripts', 'image.mjs'), '--layout', layout, '--out', out], {
    env: { ...process.env, SITS_OCI_BIN: ociBin },
  });
  const digest = r.out.trim().split('\n').at(-1) ?? '';
  if (r.code !== 0 || !/^sha256:[0-9a-f]{64}$/.test(digest)) throw new Error(`scripts/image.mjs failed (exit ${r.code}):\n${r.err.slice(-4000)}`);
  return digest;
}

/** The runtime config umoci writes beside the root filesystem (OCI runtime spec): what a container runtime would run. */
export interface BundleConfig {
  readonly process: {
    readonly args: readonly string[];
    readonly env: readonly string[];
    readonly cwd: string;
    readonly user: { readonly uid: number; readonly gid: number };
  };
}

/** `umoci unpack` of `layout:tag` into `bundle` (rootfs/ and config.json). */
export async function unpackImage(ociBin: string, layout: string, tag: string, bundle: string): Promise<{ rootfs: string; config: BundleConfig }> {
  const r = await run(join(ociBin, 'umoci'), ['unpack', '--image', `${layout}:${tag}`, bundle]);
  if (r.code !== 0) throw new Error(`umoci unpack failed: ${r.err}`);
  return { rootfs: join(bundle, 'rootfs'), config: JSON.parse(readFileSync(join(bundle, 'config.json'), 'utf8')) as BundleConfig };
}

/**
 * Runs the image's entrypoint with `args` (instead of its default command) inside `rootfs`: its user, working
 * folder and environment, nothing of this process's; the root read-only and /tmp a fresh tmpfs.
 */
export function runInImage(rootfs: string, config: BundleConfig, args: readonly string[], command?: readonly string[]): Promise<Run> {
  const { uid, gid } = config.process.user;
  // The entrypoint is the args minus the default command (umoci joins Entrypoint and Cmd).
  const argv = command ?? [...config.process.args.slice(0, config.process.args.length - 1), ...args];
  const q = (s: string): string => `'${s.replace(/'/g, "'\\''")}'`;
  const script = [
    `mount --bind ${q(rootfs)} ${q(rootfs)}`,
    `mount -o remount,bind,ro ${q(rootfs)}`,
    `mount -t tmpfs -o size=64m,mode=1777 tmpfs ${q(join(rootfs, 'tmp'))}`,
    `cd ${q(rootfs)}`,
    // env runs here and hands only the image's environment to chroot, which runs argv inside (at / there: the
    // image's working folder /app only matters for relative paths, and sits uses none).
    `exec /usr/bin/env -i ${config.process.env.map(q).join(' ')} /usr/sbin/chroot --userspec=${uid}:${gid} ${q(rootfs)} ${argv.map(q).join(' ')}`,
  ].join(' && ');
  return run('unshare', ['--mount', '--fork', '/bin/sh', '-c', script], { env: { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' } });
}
