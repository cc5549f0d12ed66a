/**
 * A real, throw-away OCI registry for tests: distribution's `registry` (tools/oci, built from Go modules by
 * tools/oci/ensure.mjs) on a free loopback port, storing blobs in a temp folder. Plain HTTP: it listens on
 * 127.0.0.1 only, so clients need `--plain-http` (helm) or `--insecure` (crane).
 *
 * The process runs in its own process group, killed by stop(), when this process exits, and by the control
 * plane's orphan watchdog if this process is killed hard.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

import { stringify as stringifyYaml } from 'yaml';

import { scaled } from '../testing/timeouts.ts';
import { Watchdog, freePorts, killGroup, runEnsure, trackProcessGroup, untrackProcessGroup } from './control-plane.ts';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const ENSURE_SCRIPT = join(REPO_ROOT, 'tools/oci/ensure.mjs');
const TAIL_LINES = 40;

export interface OciRegistry {
  /** `127.0.0.1:<port>`, as OCI references name a registry (`oci://<host>/charts`, `<host>/sits/sits:0.1.0`). */
  readonly host: string;
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** Temp folder holding the config, the storage (`storage/`) and the log (`registry.log`); removed by stop(). */
  readonly dir: string;
  readonly pid: number;
  /** The registry's last log lines. */
  tail(): readonly string[];
  /** Stops the registry (SIGTERM, then SIGKILL after 5 s) and removes `dir`. Idempotent. */
  stop(): Promise<void>;
}

let ensured: Promise<string> | undefined;

/**
 * Runs tools/oci/ensure.mjs once per process and resolves to the folder holding umoci, crane and registry
 * (SITS_OCI_BIN, or the cache; the first call may build them: minutes).
 */
export function ensureOciTools(log: (l: string) => void = (l) => process.stderr.write(`${l}\n`)): Promise<string> {
  ensured ??= runEnsure(ENSURE_SCRIPT, log).catch((e: unknown) => {
    ensured = undefined;
    throw e;
  });
  return ensured;
}

/**
 * distribution's configuration: loopback only, filesystem storage, deletes allowed, no access log. The upload
 * secret is set only so the registry does not warn that it generated one.
 */
export function registryConfigYaml(port: number, storageDir: string, secret: string): string {
  return stringifyYaml({
    version: 0.1,
    log: { level: 'warn', accesslog: { disabled: true } },
    storage: { filesystem: { rootdirectory: storageDir }, delete: { enabled: true } },
    http: { addr: `127.0.0.1:${port}`, secret },
  });
}

function getStatus(url: string, timeoutMs = 2000): Promise<number> {
  return new Promise((res, rej) => {
    const req = httpRequest(url, { method: 'GET', timeout: timeoutMs }, (resp) => {
      resp.resume();
      resp.on('end', () => res(resp.statusCode ?? 0));
    });
    req.on('timeout', () => req.destroy(new Error(`timeout after ${timeoutMs} ms`)));
    req.on('error', rej);
    req.end();
  });
}

/** Starts a registry on a free loopback port; resolves once `GET /v2/` answers 200. */
export async function startOciRegistry(
  opts: { readonly binDir?: string; readonly log?: (l: string) => void; readonly readyTimeoutMs?: number } = {},
): Promise<OciRegistry> {
  const binDir = opts.binDir ?? (await ensureOciTools(opts.log));
  const bin = join(binDir, 'registry');
  if (!existsSync(bin)) throw new Error(`${bin} not found (binDir ${binDir})`);
  const [port] = (await freePorts(1)) as [number];
  const dir = mkdtempSync(join(tmpdir(), 'sits-registry-'));
  const watchdog = new Watchdog();
  watchdog.send(`dir ${dir}`);
  const configPath = join(dir, 'config.yml');
  writeFileSync(configPath, registryConfigYaml(port, join(dir, 'storage'), randomBytes(16).toString('hex')));
  const logStream = createWriteStream(join(dir, 'registry.log'), { flags: 'a' });

  const child = spawn(bin, ['serve', configPath], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // own process group: we kill exactly what we started
    // Its OpenTelemetry auto-exporter would otherwise try an OTLP endpoint on localhost:4318 and log failures.
    env: { ...process.env, OTEL_TRACES_EXPORTER: 'none', OTEL_METRICS_EXPORTER: 'none', OTEL_LOGS_EXPORTER: 'none' },
  });
  if (child.pid === undefined) {
    await watchdog.close();
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`failed to start ${bin}`);
  }
  const pid = child.pid;
  trackProcessGroup(pid);
  watchdog.send(`+${pid}`);
  const tail: string[] = [];
  const onLine = (l: string): void => {
    tail.push(l);
    if (tail.length > TAIL_LINES) tail.shift();
    logStream.write(`${l}\n`);
    opts.log?.(`[registry] ${l}`);
  };
  createInterface({ input: child.stdout }).on('line', onLine);
  createInterface({ input: child.stderr }).on('line', onLine);
  let exitedWith: string | undefined;
  const exited = new Promise<void>((r) =>
    child.once('exit', (code, signal) => {
      exitedWith = signal ?? `code ${code}`;
      killGroup(pid, 'SIGKILL'); // stragglers of the group, if any
      untrackProcessGroup(pid);
      watchdog.send(`-${pid}`);
      r();
    }),
  );
  child.on('error', (e) => onLine(`spawn error: ${e.message}`));

  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopped ??= (async () => {
      if (child.exitCode === null && child.signalCode === null) {
        killGroup(pid, 'SIGTERM');
        const timer = setTimeout(() => killGroup(pid, 'SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
      }
      await new Promise<void>((r) => logStream.end(() => r()));
      await watchdog.close();
      rmSync(dir, { recursive: true, force: true });
    })());

  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + (opts.readyTimeoutMs ?? scaled(30_000));
  let last = 'no response yet';
  for (;;) {
    if (exitedWith !== undefined) {
      await stop();
      throw new Error(`registry exited (${exitedWith}) before it was ready:\n${tail.join('\n')}`);
    }
    try {
      const status = await getStatus(`${url}/v2/`);
      if (status === 200) break;
      last = `HTTP ${status}`;
    } catch (e) {
      last = (e as Error).message;
    }
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`registry at ${url} not ready within ${opts.readyTimeoutMs ?? scaled(30_000)} ms (${last}):\n${tail.join('\n')}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  opts.log?.(`registry ready at ${url} (dir ${dir})`);
  return { host: `127.0.0.1:${port}`, url, dir, pid, tail: () => [...tail], stop };
}
