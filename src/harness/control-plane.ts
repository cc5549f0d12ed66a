// A real, throw-away Kubernetes control plane for tests: etcd + kube-apiserver (+ optional
// kube-scheduler), each a child process in its own process group, all state in one temp dir.
//
// Binaries come from `binDir`, else from `node tools/k8s/ensure.mjs` (SITS_K8S_BIN, or a cache
// that is built from the Go modules in tools/k8s on first use). See docs/control-plane.md.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { makeScratchDir, sweepStaleScratch } from './scratch-dirs.ts';
import { createWriteStream, existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import type { WriteStream } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createServer } from 'node:net';
import type { AddressInfo, Server } from 'node:net';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

import { KubeConfig } from '@kubernetes/client-node';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';

import { scaled } from '../testing/timeouts.ts';

export interface SchedulerOptions {
  /** KubeSchedulerConfiguration YAML. Missing `clientConnection.kubeconfig` and `leaderElection` are filled in. */
  config?: string;
}

export interface ControlPlaneOptions {
  /** Folder holding etcd, kube-apiserver, kube-scheduler. Default: output of tools/k8s/ensure.mjs. */
  binDir?: string;
  /** Also start kube-scheduler (default config, or the given one). */
  withScheduler?: boolean | SchedulerOptions;
  /** Receives progress lines and every log line of the child processes (prefixed with the process name). */
  log?: (line: string) => void;
  /** How long each component may take to become ready. Default 120 s times the test timeout scale (src/testing/timeouts.ts). */
  readyTimeoutMs?: number;
  /** Extra kube-apiserver flags, e.g. ['--enable-priority-and-fairness=false']. Later flags win. */
  apiServerArgs?: readonly string[];
  /** Extra kube-scheduler flags. */
  schedulerArgs?: readonly string[];
  /** More static bearer tokens the apiserver accepts (and answers TokenReviews for), besides the admin's. */
  tokens?: readonly { readonly token: string; readonly user: string; readonly uid?: string; readonly groups?: readonly string[] }[];
}

export interface SchedulerProcess {
  readonly pid: number;
  /** https://127.0.0.1:<port> (serves /healthz, /readyz, /metrics; the control plane token works for /metrics). */
  readonly url: string;
  readonly configPath: string;
  readonly logPath: string;
  stop(): Promise<void>;
}

export interface ControllerManagerOptions {
  /** kube-controller-manager's --controllers names (its own spelling, e.g. 'persistentvolume-binder-controller'). */
  readonly controllers: readonly string[];
  /** Extra flags; later flags win. */
  readonly args?: readonly string[];
}

export interface ControllerManagerProcess {
  readonly pid: number;
  /** https://127.0.0.1:<port> (serves /healthz; the control plane token works). */
  readonly url: string;
  readonly logPath: string;
  stop(): Promise<void>;
}

/** Another component run beside the control plane (ControlPlane.startProcess). */
export interface ComponentProcess {
  readonly pid: number;
  readonly logPath: string;
  /** Whether it is still running. */
  alive(): boolean;
  /** Its last log lines. */
  tail(): readonly string[];
  stop(): Promise<void>;
}

export interface ControlPlane {
  readonly kubeconfigPath: string;
  /** https://127.0.0.1:<port> */
  readonly server: string;
  /** Bearer token of a `system:masters` user. */
  readonly token: string;
  /** Temp dir holding all state, config and logs; removed by stop(). */
  readonly dir: string;
  readonly binDir: string;
  /** http://127.0.0.1:<port> */
  readonly etcdUrl: string;
  /** Log files of etcd, kube-apiserver and kube-scheduler inside `dir`. */
  readonly logPaths: { readonly etcd: string; readonly apiServer: string; readonly scheduler: string };
  /** The running kube-scheduler, if any. */
  readonly scheduler: SchedulerProcess | undefined;
  /** A fresh KubeConfig for this cluster. */
  kubeConfig(): KubeConfig;
  /** Stops kube-apiserver and starts it again on the same port against the same etcd; resolves when /readyz is ok. */
  restartApiServer(): Promise<void>;
  /** SIGKILLs kube-apiserver (no graceful shutdown: open requests cut) and starts it again; resolves when /readyz is ok. */
  killApiServer(): Promise<void>;
  /**
   * SIGKILLs etcd and starts it again on the same ports with the same data dir; resolves when its /health is ok
   * (kube-apiserver keeps running and reconnects by itself).
   */
  killEtcd(): Promise<void>;
  startScheduler(configYaml?: string): Promise<SchedulerProcess>;
  stopScheduler(): Promise<void>;
  /**
   * Starts kube-controller-manager (built by tools/k8s/ensure-controller-manager.mjs on first use) running the
   * given controllers, e.g. ['persistentvolume-binder-controller']; resolves when its /healthz is ok.
   */
  startControllerManager(opts: ControllerManagerOptions): Promise<ControllerManagerProcess>;
  stopControllerManager(): Promise<void>;
  /**
   * Starts another component (e.g. the CSI snapshot controller) as a child like the others: its own process group,
   * KUBECONFIG set to the admin kubeconfig, output in `<dir>/<name>.log`, killed by stop() and by the orphan watchdog.
   */
  startProcess(name: string, binPath: string, args: readonly string[]): ComponentProcess;
  /** PIDs of the live child processes (process-group leaders), for leak checks. */
  childPids(): number[];
  /** Kills every child process group and removes `dir`. Idempotent. */
  stop(): Promise<void>;
}

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const ENSURE_SCRIPT = join(REPO_ROOT, 'tools/k8s/ensure.mjs');
const ENSURE_KCM_SCRIPT = join(REPO_ROOT, 'tools/k8s/ensure-controller-manager.mjs');
const LOG_TAIL_LINES = 40;

// ---------------------------------------------------------------------------------------------
// Binaries

let ensured: Promise<string> | undefined;

/**
 * Runs `node tools/k8s/ensure.mjs` (once per process) and resolves to the folder holding the
 * binaries. The first call may build them, which takes many minutes: call it in a `beforeAll`
 * with a long timeout. Progress lines go to `log` (default: stderr).
 */
export function ensureK8sBinaries(opts: { log?: (line: string) => void } = {}): Promise<string> {
  ensured ??= runEnsure(ENSURE_SCRIPT, opts.log ?? ((l) => process.stderr.write(`${l}\n`))).catch((e: unknown) => {
    ensured = undefined;
    throw e;
  });
  return ensured;
}

let ensuredKcm: Promise<string> | undefined;

/** As ensureK8sBinaries, for kube-controller-manager (its own cache folder; SITS_KCM_BIN overrides). */
export function ensureControllerManager(opts: { log?: (line: string) => void } = {}): Promise<string> {
  ensuredKcm ??= runEnsure(ENSURE_KCM_SCRIPT, opts.log ?? ((l) => process.stderr.write(`${l}\n`))).catch((e: unknown) => {
    ensuredKcm = undefined;
    throw e;
  });
  return ensuredKcm;
}

/** Runs a tools/<name>/ensure.mjs script and resolves to the folder it prints last; its stderr goes to `log`. */
export function runEnsure(script: string, log: (line: string) => void): Promise<string> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'pipe'] });
    const out: string[] = [];
    const errTail: string[] = [];
    createInterface({ input: child.stdout }).on('line', (l) => out.push(l));
    createInterface({ input: child.stderr }).on('line', (l) => {
      pushTail(errTail, l);
      log(l);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const dir = out
        .filter((l) => l.trim() !== '')
        .at(-1)
        ?.trim();
      if (code === 0 && dir) resolvePromise(dir);
      else reject(new Error(`${script} failed (exit code ${code}):\n${errTail.join('\n')}`));
    });
  });
}

// ---------------------------------------------------------------------------------------------
// Child process bookkeeping and orphan protection

interface Managed {
  readonly name: string;
  readonly child: ChildProcess;
  readonly pid: number;
  readonly tail: string[];
  readonly exited: Promise<void>;
  stopping: boolean;
}

/** Process groups started by this module in this process; killed on exit/signals. */
const liveGroups = new Set<number>();
let exitHooksInstalled = false;

function installExitHooks(): void {
  if (exitHooksInstalled) return;
  exitHooksInstalled = true;
  process.on('exit', killAllGroupsNow);
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const handler = (): void => {
      process.removeListener(sig, handler);
      // Someone else handles the signal (a graceful stop, e.g. `sits dev up` stopping its scheduler and controllers
      // before the apiserver they talk to): the children go when the process exits ('exit' above). Nobody else:
      // kill them now and keep the default behaviour (terminate).
      if (process.listenerCount(sig) > 0) return;
      killAllGroupsNow();
      process.kill(process.pid, sig);
    };
    process.on(sig, handler);
  }
}

/**
 * Registers a process group started outside a control plane (e.g. src/harness/oci-registry.ts) to be killed when
 * this process exits or is signalled, as the control plane's are; forget it with untrackProcessGroup once it exited.
 */
export function trackProcessGroup(pgid: number): void {
  installExitHooks();
  liveGroups.add(pgid);
}

export function untrackProcessGroup(pgid: number): void {
  liveGroups.delete(pgid);
}

function killAllGroupsNow(): void {
  for (const pgid of liveGroups) killGroup(pgid, 'SIGKILL');
  liveGroups.clear();
}

export function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // group already gone
  }
}

/** The orphan watchdog's script (one per control plane): see the file. Resolved beside this source, from dist/ too. */
export const WATCHDOG_SCRIPT = fileURLToPath(new URL('./watchdog.mjs', import.meta.url));

/** The orphan watchdog, also used by other harness processes (src/harness/oci-registry.ts). */
export class Watchdog {
  private readonly child: ChildProcess;
  constructor() {
    this.child = spawn(process.execPath, [WATCHDOG_SCRIPT], { stdio: ['pipe', 'ignore', 'ignore'], detached: true });
    this.child.unref();
    const stdin = this.child.stdin as (NodeJS.WritableStream & { unref?: () => void }) | null;
    stdin?.unref?.();
    this.child.on('error', () => undefined);
    this.child.stdin?.on('error', () => undefined);
  }
  /** PID while the watchdog runs. */
  get pid(): number | undefined {
    return this.child.exitCode === null && this.child.signalCode === null ? this.child.pid : undefined;
  }
  send(line: string): void {
    this.child.stdin?.write(`${line}\n`);
  }
  /** Tells the watchdog all is cleaned up and lets it exit. */
  async close(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    const exited = new Promise<void>((r) => this.child.once('exit', () => r()));
    this.send('bye');
    this.child.stdin?.end();
    await Promise.race([exited, sleep(5000)]);
    if (this.child.exitCode === null && this.child.pid) killGroup(this.child.pid, 'SIGKILL');
  }
}

// ---------------------------------------------------------------------------------------------
// Helpers

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function pushTail(tail: string[], line: string): void {
  tail.push(line);
  if (tail.length > LOG_TAIL_LINES) tail.shift();
}

/** Reserves `n` distinct free loopback ports (all held open at once, then released). */
export async function freePorts(n: number): Promise<number[]> {
  const servers: Server[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const srv = createServer();
      servers.push(srv);
      await new Promise<void>((res, rej) => {
        srv.once('error', rej);
        srv.listen(0, '127.0.0.1', () => res());
      });
    }
    return servers.map((s) => (s.address() as AddressInfo).port);
  } finally {
    await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
  }
}

interface HttpResult {
  status: number;
  body: string;
}

function httpGet(url: string, token?: string, timeoutMs = 5000): Promise<HttpResult> {
  return new Promise((res, rej) => {
    const u = new URL(url);
    const opts = {
      method: 'GET',
      timeout: timeoutMs,
      headers: token ? { Authorization: `Bearer ${token}` } : {},
      rejectUnauthorized: false,
    };
    const req = (u.protocol === 'https:' ? httpsRequest : httpRequest)(u, opts, (resp) => {
      let body = '';
      resp.setEncoding('utf8');
      resp.on('data', (d: string) => (body += d));
      resp.on('end', () => res({ status: resp.statusCode ?? 0, body }));
      resp.on('error', rej);
    });
    req.on('timeout', () => req.destroy(new Error(`timeout after ${timeoutMs} ms`)));
    req.on('error', rej);
    req.end();
  });
}

// ---------------------------------------------------------------------------------------------
// The control plane

class ControlPlaneImpl implements ControlPlane {
  readonly kubeconfigPath: string;
  readonly server: string;
  readonly token: string;
  readonly etcdUrl: string;
  readonly logPaths: { readonly etcd: string; readonly apiServer: string; readonly scheduler: string };

  private readonly procs = new Map<string, Managed>();
  private readonly logStreams = new Map<string, WriteStream>();
  private readonly watchdog: Watchdog;
  private readonly readyTimeoutMs: number;
  private readonly apiServerArgs: string[];
  private readonly schedulerArgs: readonly string[];
  private schedulerHandle: SchedulerProcess | undefined;
  private stopped: Promise<void> | undefined;

  constructor(
    readonly dir: string,
    readonly binDir: string,
    private readonly ports: { etcd: number; etcdPeer: number; apiServer: number },
    private readonly opts: ControlPlaneOptions,
  ) {
    this.readyTimeoutMs = opts.readyTimeoutMs ?? scaled(120_000);
    this.schedulerArgs = opts.schedulerArgs ?? [];
    this.server = `https://127.0.0.1:${ports.apiServer}`;
    this.etcdUrl = `http://127.0.0.1:${ports.etcd}`;
    this.token = randomBytes(24).toString('hex');
    this.kubeconfigPath = join(dir, 'admin.kubeconfig');
    this.logPaths = { etcd: join(dir, 'etcd.log'), apiServer: join(dir, 'kube-apiserver.log'), scheduler: join(dir, 'kube-scheduler.log') };
    this.watchdog = new Watchdog();
    this.watchdog.send(`dir ${dir}`);

    const pki = join(dir, 'pki');
    mkdirSync(pki, { recursive: true });
    mkdirSync(join(dir, 'etcd'), { recursive: true });
    const extra = (opts.tokens ?? []).map((t) => `${t.token},${t.user},${t.uid ?? t.user},"${(t.groups ?? []).join(',')}"\n`).join('');
    writeFileSync(join(dir, 'tokens.csv'), `${this.token},admin,admin-uid,system:masters\n${extra}`, { mode: 0o600 });
    const { privateKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      privateKeyEncoding: { type: 'pkcs1', format: 'pem' },
      publicKeyEncoding: { type: 'spki', format: 'pem' },
    });
    writeFileSync(join(pki, 'sa.key'), privateKey, { mode: 0o600 });
    writeFileSync(this.kubeconfigPath, kubeconfigYaml(this.server, this.token), { mode: 0o600 });

    this.apiServerArgs = [
      `--etcd-servers=${this.etcdUrl}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      `--secure-port=${ports.apiServer}`,
      `--cert-dir=${pki}`,
      `--token-auth-file=${join(dir, 'tokens.csv')}`,
      '--authorization-mode=RBAC',
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${join(pki, 'sa.key')}`,
      `--service-account-signing-key-file=${join(pki, 'sa.key')}`,
      '--service-cluster-ip-range=10.0.0.0/24',
      '--allow-privileged=true',
      '--disable-admission-plugins=ServiceAccount,TaintNodesByCondition',
      // The lease reconciler would try to publish 127.0.0.1 as the `kubernetes` endpoint, which the
      // API rejects (loopback) and logs every 10 s.
      '--endpoint-reconciler-type=none',
      // On SIGTERM, end open watches (e.g. kube-scheduler's) instead of waiting for them.
      '--shutdown-watch-termination-grace-period=2s',
      ...(opts.apiServerArgs ?? []),
    ];
  }

  get scheduler(): SchedulerProcess | undefined {
    return this.schedulerHandle;
  }

  kubeConfig(): KubeConfig {
    const kc = new KubeConfig();
    kc.loadFromFile(this.kubeconfigPath);
    return kc;
  }

  childPids(): number[] {
    const pids = [...this.procs.values()].filter((p) => p.child.exitCode === null && p.child.signalCode === null).map((p) => p.pid);
    const wd = this.watchdog.pid;
    return wd !== undefined ? [...pids, wd] : pids;
  }

  private log(line: string): void {
    this.opts.log?.(line);
  }

  private spawnManaged(name: string, bin: string, args: readonly string[], logPath: string): Managed {
    const existing = this.procs.get(name);
    if (existing && existing.child.exitCode === null && existing.child.signalCode === null) {
      throw new Error(`${name} is already running (pid ${existing.pid})`);
    }
    let stream = this.logStreams.get(logPath);
    if (!stream) {
      stream = createWriteStream(logPath, { flags: 'a' });
      this.logStreams.set(logPath, stream);
    }
    const logStream = stream;
    // `bin` is a name in binDir, or an absolute path (kube-controller-manager lives in its own cache folder).
    const path = isAbsolute(bin) ? bin : join(this.binDir, bin);
    const child = spawn(path, args, {
      cwd: this.dir,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true, // own process group: we kill exactly what we started
      env: { ...process.env, KUBECONFIG: this.kubeconfigPath },
    });
    if (child.pid === undefined) {
      throw new Error(`failed to start ${path}`);
    }
    const pid = child.pid;
    liveGroups.add(pid);
    this.watchdog.send(`+${pid}`);
    logStream.write(`---- ${new Date().toISOString()} ${bin} ${args.join(' ')}\n`);
    const tail: string[] = [];
    const onLine = (l: string): void => {
      pushTail(tail, l);
      logStream.write(`${l}\n`);
      this.opts.log?.(`[${name}] ${l}`);
    };
    createInterface({ input: child.stdout }).on('line', onLine);
    createInterface({ input: child.stderr }).on('line', onLine);
    const managed: Managed = {
      name,
      child,
      pid,
      tail,
      stopping: false,
      exited: new Promise<void>((r) => {
        child.once('exit', (code, signal) => {
          // The group may still hold stragglers; make sure it is gone, then forget it.
          killGroup(pid, 'SIGKILL');
          liveGroups.delete(pid);
          this.watchdog.send(`-${pid}`);
          const msg = `${name} (pid ${pid}) exited with ${signal ?? `code ${code}`}`;
          logStream.write(`---- ${msg}\n`);
          if (!managed.stopping) this.log(`${msg} unexpectedly`);
          r();
        });
      }),
    };
    child.on('error', (e) => onLine(`spawn error: ${e.message}`));
    this.procs.set(name, managed);
    return managed;
  }

  private async stopManaged(name: string, graceMs = 15_000, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const p = this.procs.get(name);
    if (!p) return;
    p.stopping = true;
    if (p.child.exitCode === null && p.child.signalCode === null) {
      killGroup(p.pid, signal);
      const timedOut = await Promise.race([p.exited.then(() => false), sleep(graceMs).then(() => true)]);
      if (timedOut) {
        this.log(`${name} did not stop within ${graceMs} ms; killing it`);
        killGroup(p.pid, 'SIGKILL');
      }
    }
    await p.exited;
    this.procs.delete(name);
  }

  /** Polls `url` until it answers 200, failing early if the process exits. */
  private async waitReady(p: Managed, url: string, token?: string): Promise<void> {
    const deadline = Date.now() + this.readyTimeoutMs;
    let last = 'no response yet';
    let exited = false;
    void p.exited.then(() => (exited = true));
    while (Date.now() < deadline) {
      if (exited) {
        throw new Error(`${p.name} exited before becoming ready (${url}). Last log lines:\n${p.tail.join('\n')}`);
      }
      try {
        const r = await httpGet(url, token);
        if (r.status === 200) return;
        const failing = r.body.split('\n').filter((l) => l.startsWith('[-]'));
        last = `HTTP ${r.status}: ${failing.length > 0 ? failing.slice(0, 10).join(' | ') : r.body.trim().slice(0, 300)}`;
      } catch (e) {
        last = e instanceof Error ? e.message : String(e);
      }
      await sleep(250);
    }
    throw new Error(
      `${p.name} did not become ready within ${Math.round(this.readyTimeoutMs / 1000)} s (${url}; last result: ${last}). ` +
        `Last log lines:\n${p.tail.join('\n')}`,
    );
  }

  async startEtcd(): Promise<void> {
    const peer = `http://127.0.0.1:${this.ports.etcdPeer}`;
    const p = this.spawnManaged(
      'etcd',
      'etcd',
      [
        '--name=default',
        `--data-dir=${join(this.dir, 'etcd')}`,
        `--listen-client-urls=${this.etcdUrl}`,
        `--advertise-client-urls=${this.etcdUrl}`,
        `--listen-peer-urls=${peer}`,
        `--initial-advertise-peer-urls=${peer}`,
        `--initial-cluster=default=${peer}`,
        '--unsafe-no-fsync=true',
        '--log-level=warn',
      ],
      this.logPaths.etcd,
    );
    await this.waitReady(p, `${this.etcdUrl}/health`);
  }

  async startApiServer(): Promise<void> {
    const p = this.spawnManaged('kube-apiserver', 'kube-apiserver', this.apiServerArgs, this.logPaths.apiServer);
    await this.waitReady(p, `${this.server}/readyz`, this.token);
  }

  async restartApiServer(): Promise<void> {
    this.assertRunning();
    this.log('restarting kube-apiserver');
    await this.stopManaged('kube-apiserver', 30_000);
    await this.startApiServer();
  }

  async killApiServer(): Promise<void> {
    this.assertRunning();
    this.log('killing kube-apiserver (SIGKILL) and starting it again');
    await this.stopManaged('kube-apiserver', 10_000, 'SIGKILL');
    await this.startApiServer();
  }

  async killEtcd(): Promise<void> {
    this.assertRunning();
    this.log('killing etcd (SIGKILL) and starting it again');
    await this.stopManaged('etcd', 10_000, 'SIGKILL');
    await this.startEtcd();
  }

  async startScheduler(configYaml?: string): Promise<SchedulerProcess> {
    this.assertRunning();
    if (this.schedulerHandle) throw new Error('kube-scheduler is already running; call stopScheduler() first');
    const [port] = await freePorts(1);
    if (port === undefined) throw new Error('no free port');
    const configPath = join(this.dir, 'kube-scheduler.yaml');
    writeFileSync(configPath, schedulerConfigYaml(configYaml, this.kubeconfigPath));
    const p = this.spawnManaged(
      'kube-scheduler',
      'kube-scheduler',
      [
        `--config=${configPath}`,
        '--bind-address=127.0.0.1',
        `--secure-port=${port}`,
        // Token auth for /metrics via TokenReview; skip-lookup because without --client-ca-file the
        // apiserver never creates kube-system/extension-apiserver-authentication.
        `--authentication-kubeconfig=${this.kubeconfigPath}`,
        '--authentication-skip-lookup=true',
        `--authorization-kubeconfig=${this.kubeconfigPath}`,
        ...this.schedulerArgs,
      ],
      this.logPaths.scheduler,
    );
    const url = `https://127.0.0.1:${port}`;
    try {
      await this.waitReady(p, `${url}/readyz`, this.token);
    } catch (e) {
      await this.stopManaged('kube-scheduler');
      throw e;
    }
    const handle: SchedulerProcess = {
      pid: p.pid,
      url,
      configPath,
      logPath: this.logPaths.scheduler,
      stop: () => this.stopScheduler(),
    };
    this.schedulerHandle = handle;
    return handle;
  }

  async stopScheduler(): Promise<void> {
    await this.stopManaged('kube-scheduler');
    this.schedulerHandle = undefined;
  }

  async startControllerManager(opts: ControllerManagerOptions): Promise<ControllerManagerProcess> {
    this.assertRunning();
    if (opts.controllers.length === 0) throw new Error('startControllerManager: name at least one controller');
    const binDir = await ensureControllerManager(this.opts.log ? { log: this.opts.log } : {});
    const [port] = await freePorts(1);
    if (port === undefined) throw new Error('no free port');
    const logPath = join(this.dir, 'kube-controller-manager.log');
    const p = this.spawnManaged(
      'kube-controller-manager',
      join(binDir, 'kube-controller-manager'),
      [
        `--kubeconfig=${this.kubeconfigPath}`,
        '--leader-elect=false',
        `--controllers=${opts.controllers.join(',')}`,
        '--bind-address=127.0.0.1',
        `--secure-port=${port}`,
        `--authentication-kubeconfig=${this.kubeconfigPath}`,
        '--authentication-skip-lookup=true',
        `--authorization-kubeconfig=${this.kubeconfigPath}`,
        // Its own client per controller would need token secrets the test apiserver does not mint.
        '--use-service-account-credentials=false',
        ...(opts.args ?? []),
      ],
      logPath,
    );
    const url = `https://127.0.0.1:${port}`;
    try {
      await this.waitReady(p, `${url}/healthz`, this.token);
    } catch (e) {
      await this.stopManaged('kube-controller-manager');
      throw e;
    }
    return { pid: p.pid, url, logPath, stop: () => this.stopControllerManager() };
  }

  async stopControllerManager(): Promise<void> {
    await this.stopManaged('kube-controller-manager');
  }

  startProcess(name: string, binPath: string, args: readonly string[]): ComponentProcess {
    this.assertRunning();
    const logPath = join(this.dir, `${name}.log`);
    const p = this.spawnManaged(name, binPath, args, logPath);
    return {
      pid: p.pid,
      logPath,
      alive: () => p.child.exitCode === null && p.child.signalCode === null,
      tail: () => [...p.tail],
      stop: () => this.stopManaged(name),
    };
  }

  private assertRunning(): void {
    if (this.stopped) throw new Error('control plane was stopped');
  }

  stop(): Promise<void> {
    this.stopped ??= this.doStop();
    return this.stopped;
  }

  private async doStop(): Promise<void> {
    const keep = Boolean(process.env['SITS_KEEP_CONTROL_PLANE_DIR']);
    // What runs against the apiserver stops first, while it still answers (leases released, watches ended).
    for (const name of ['kube-scheduler', 'kube-controller-manager']) {
      await this.stopManaged(name).catch((e: unknown) => this.log(`stopping ${name}: ${String(e)}`));
    }
    for (const [name] of this.procs) if (name !== 'kube-apiserver' && name !== 'etcd') await this.stopManaged(name);
    // Then apiserver and etcd. Their state is removed just after, so a graceful shutdown (about 1.2 s, most of it the
    // apiserver's) buys nothing: SIGKILL, unless the folder is kept for a look at it.
    for (const name of ['kube-apiserver', 'etcd']) {
      await this.stopManaged(name, 15_000, keep ? 'SIGTERM' : 'SIGKILL').catch((e: unknown) => this.log(`stopping ${name}: ${String(e)}`));
    }
    this.schedulerHandle = undefined;
    await Promise.all([...this.logStreams.values()].map((s) => new Promise<void>((r) => s.end(() => r()))));
    this.logStreams.clear();
    await this.watchdog.close();
    if (keep) this.log(`kept ${this.dir} (SITS_KEEP_CONTROL_PLANE_DIR)`);
    else rmSync(this.dir, { recursive: true, force: true });
  }
}

/** A kubeconfig for `server` (TLS not verified: the test apiserver's certificate is self-signed) with a bearer token. */
export function kubeconfigYaml(server: string, token: string): string {
  return stringifyYaml({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'sits-test', cluster: { server, 'insecure-skip-tls-verify': true } }],
    users: [{ name: 'admin', user: { token } }],
    contexts: [{ name: 'sits-test', context: { cluster: 'sits-test', user: 'admin' } }],
    'current-context': 'sits-test',
  });
}

/**
 * Builds the KubeSchedulerConfiguration written for kube-scheduler: the given YAML (or a default
 * one) with `clientConnection.kubeconfig` and `leaderElection.leaderElect: false` filled in when missing.
 */
export function schedulerConfigYaml(configYaml: string | undefined, kubeconfigPath: string): string {
  const parsed: unknown = configYaml ? parseYaml(configYaml) : {};
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new Error('scheduler config must be a YAML mapping (KubeSchedulerConfiguration)');
  }
  const cfg = parsed as Record<string, unknown>;
  cfg['apiVersion'] ??= 'kubescheduler.config.k8s.io/v1';
  cfg['kind'] ??= 'KubeSchedulerConfiguration';
  const cc = (cfg['clientConnection'] ??= {}) as Record<string, unknown>;
  cc['kubeconfig'] ??= kubeconfigPath;
  const le = (cfg['leaderElection'] ??= {}) as Record<string, unknown>;
  le['leaderElect'] ??= false;
  return stringifyYaml(cfg);
}

/**
 * Starts etcd and kube-apiserver (and kube-scheduler if asked) on free loopback ports in a new
 * temp dir. Resolves once /readyz is ok. Always call `stop()` (e.g. in afterAll); child process
 * groups are also killed when this process exits, and by a watchdog if it is killed hard.
 */
export async function startControlPlane(opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const binDir = opts.binDir ?? (await ensureK8sBinaries(opts.log ? { log: opts.log } : {}));
  for (const b of ['etcd', 'kube-apiserver', 'kube-scheduler']) {
    if (!existsSync(join(binDir, b))) throw new Error(`${join(binDir, b)} not found (binDir ${binDir})`);
  }
  installExitHooks();
  const [etcd, etcdPeer, apiServer] = await freePorts(3);
  if (etcd === undefined || etcdPeer === undefined || apiServer === undefined) throw new Error('no free ports');
  // A control plane SIGKILLed with its test or `sits dev up` left its folder (etcd data, logs): removed now.
  sweepStaleScratch('sits-cp-');
  const dir = makeScratchDir('sits-cp-');
  const cp = new ControlPlaneImpl(dir, binDir, { etcd, etcdPeer, apiServer }, opts);
  try {
    const t0 = Date.now();
    await cp.startEtcd();
    await cp.startApiServer();
    opts.log?.(`control plane ready at ${cp.server} in ${Date.now() - t0} ms (dir ${dir})`);
    if (opts.withScheduler) {
      await cp.startScheduler(typeof opts.withScheduler === 'object' ? opts.withScheduler.config : undefined);
    }
  } catch (e) {
    await cp.stop();
    throw e;
  }
  return cp;
}
