/**
 * The CLI's one error path (issue 31), through the real binary: every user error ends with exactly one line
 * `sits: <what>: <why> (<what to do>)` on stderr, exit 2 for usage/input and 1 for runtime, and no stack trace
 * unless --debug. Each case is one row; the kubeconfig cases run with an empty HOME and no $KUBECONFIG.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSits, type SitsRun } from '../testing/sits-cli.ts';

/** The one line: `sits: <what>: <why> (<what to do>)`. */
export const ERROR_LINE = /^sits: [^\n]+: [^\n]+ \([^\n]+\)\n$/;

const tmp = mkdtempSync(join(tmpdir(), 'sits-cli-errors-'));
const home = join(tmp, 'home');
mkdirSync(home);
const file = (name: string, content: string | Buffer): string => {
  const p = join(tmp, name);
  writeFileSync(p, content);
  return p;
};
const kubeconfig = (server: string, extra = ''): string =>
  `apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: ${server}\n${extra}contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\nusers:\n- name: u\n  user: {token: abc}\n`;
const binary = file('random.bin', Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0x02, 0x01, 0x00, 0x00, 0xff, 0xfe, 0x00, 0x10, 0x3a, 0x0a]));
const cluster = file('cluster.yaml', 'nodes:\n  - {namePrefix: h100-, count: 2, shape: dgx-h100, rack: r0}\n');
const workload = file('wl.yaml', 'pods:\n  - {name: a, gpu: 1}\n');
const badWorkload = file('bad-wl.yaml', 'pods:\n  - name: a\n    gpu: -1\n');
const badCluster = file('bad-cluster.yaml', 'nodes:\n  - {namePrefix: h100-, count: 2, shape: dgx-h99, rack: r0}\n');
const aFile = file('plain.txt', 'x\n');

/** A port nobody listens on: bound, then closed. */
async function closedPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

let busy: Server;
let busyPort = 0;
let refused = 0;
let unreachable = '';
beforeAll(async () => {
  busy = createServer();
  await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
  busyPort = (busy.address() as { port: number }).port;
  refused = await closedPort();
  unreachable = file('unreachable.kubeconfig', kubeconfig(`https://127.0.0.1:${refused}`, '    insecure-skip-tls-verify: true\n'));
});
afterAll(() => new Promise<void>((r) => busy.close(() => r())));

/** A clean environment: no kubeconfig anywhere, not in a pod. */
function env(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const e: NodeJS.ProcessEnv = { ...process.env, HOME: home, ...extra };
  for (const k of ['KUBECONFIG', 'KUBERNETES_SERVICE_HOST', 'KUBERNETES_SERVICE_PORT']) if (!(k in extra)) delete e[k];
  return e;
}

interface Case {
  readonly name: string;
  readonly args: () => readonly string[];
  readonly env?: () => NodeJS.ProcessEnv;
  readonly exit: 1 | 2;
  /** The whole stderr line, or a pattern it must match (beside the shape). */
  readonly line: string | RegExp | (() => string | RegExp);
}

const CASES: readonly Case[] = [
  // usage: flags and arguments
  {
    name: 'a bad --seed',
    args: () => ['demo', '--seed', 'abc'],
    exit: 2,
    line: 'sits: demo --seed: "abc" is not a whole number (give a whole number, e.g. 42; see sits demo --help)\n',
  },
  {
    name: 'a fractional --seed',
    args: () => ['demo', '--seed', '1.5'],
    exit: 2,
    line: 'sits: demo --seed: "1.5" is not a whole number (give a whole number, e.g. 42; see sits demo --help)\n',
  },
  {
    name: 'a port out of range',
    args: () => ['demo', '--port', '99999'],
    exit: 2,
    line: 'sits: demo --port: 99999 is out of range (give a whole number from 0 to 65535; see sits demo --help)\n',
  },
  {
    name: 'a number that is not one',
    args: () => ['demo', '--hours', 'NaN'],
    exit: 2,
    line: 'sits: demo --hours: "NaN" is not a number (give a number from 0.1 to 1000; see sits demo --help)\n',
  },
  {
    name: 'an unknown profile in --profiles',
    args: () => ['demo', '--profiles', 'sits,nope'],
    exit: 2,
    line: /^sits: --profiles: unknown profile "nope" \(one of sits, .*kube-default.*\)\n$/,
  },
  {
    name: 'an unknown --profile',
    args: () => ['schedule', '--cluster', cluster, '--workload', workload, '--profile', 'nope'],
    exit: 2,
    line: /^sits: --profile: unknown profile "nope" \(known: sits, .*\)\n$/,
  },
  {
    name: 'an unknown output format',
    args: () => ['schedule', '--cluster', cluster, '--workload', workload, '-o', 'xml'],
    exit: 2,
    line: 'sits: --output: "xml" is not a format (one of table, wide, json, yaml)\n',
  },
  { name: 'an unknown command', args: () => ['lnt'], exit: 2, line: 'sits: lnt: unknown command (Did you mean lint? see sits --help)\n' },
  { name: 'an unknown option', args: () => ['demo', '--bogus'], exit: 2, line: 'sits: demo --bogus: unknown option (see sits demo --help)\n' },
  { name: 'a required option missing', args: () => ['deploy'], exit: 2, line: 'sits: deploy --out: required option not given (see sits deploy --help)\n' },
  { name: 'an option without its value', args: () => ['demo', '--seed'], exit: 2, line: 'sits: demo --seed: value missing (see sits demo --help)\n' },
  {
    name: 'a required argument missing',
    args: () => ['explain'],
    exit: 2,
    line: 'sits: explain <target>: required argument missing (see sits explain --help)\n',
  },
  {
    name: 'a bad explain target',
    args: () => ['explain', 'a/b/c'],
    exit: 2,
    line: 'sits: <target>: must be NAME or namespace/name, got "a/b/c" (e.g. sits explain train-0 -n default, or sits explain default/train-0)\n',
  },
  // input files
  {
    name: 'a missing workload file',
    args: () => ['schedule', '--cluster', cluster, '--workload', join(tmp, 'nope.yaml')],
    exit: 2,
    line: () => `sits: --workload ${join(tmp, 'nope.yaml')}: no such file (check the path of the workload file)\n`,
  },
  {
    name: 'a folder given as the cluster file',
    args: () => ['schedule', '--cluster', tmp, '--workload', workload],
    exit: 2,
    line: () => `sits: --cluster ${tmp}: is a folder, not a file (give the cluster YAML file itself)\n`,
  },
  {
    name: 'a binary file as workload',
    args: () => ['schedule', '--cluster', cluster, '--workload', binary],
    exit: 2,
    line: () => `sits: --workload ${binary}: not a workload file: binary data (a NUL byte at offset 6) (give the workload YAML file)\n`,
  },
  {
    name: 'a binary scenario file',
    args: () => ['scenario', binary],
    exit: 2,
    line: () => `sits: ${binary}: not a scenario file: binary data (a NUL byte at offset 6) (give the scenario YAML file)\n`,
  },
  {
    name: 'a binary --values file',
    args: () => ['deploy', '--out', join(tmp, 'deploy-v'), '--values', binary],
    exit: 2,
    line: () => `sits: --values ${binary}: not a values file: binary data (a NUL byte at offset 6) (give the values YAML file)\n`,
  },
  {
    name: 'a bad field in the workload',
    args: () => ['schedule', '--cluster', cluster, '--workload', badWorkload],
    exit: 2,
    line: () => `sits: ${badWorkload}:3:10: pods[0].gpu: Expected number to be greater or equal to 0 (got -1) (fix the file; nothing was applied)\n`,
  },
  {
    name: 'a bad node group in the training bench’s own cluster',
    args: () => ['bench', 'training', '--cluster', badCluster, '--json', join(tmp, 'training.json')],
    exit: 2,
    line: /^sits: .*bad-cluster\.yaml:2:\d+: nodes\[0\]\.shape: .*dgx-h99.*\n$/,
  },
  // outputs: checked before the work starts
  {
    name: 'an output file in a missing folder',
    args: () => ['demo', '--json', '/nonexistent/dir/out.json'],
    exit: 2,
    line: 'sits: --json /nonexistent/dir/out.json: folder /nonexistent/dir does not exist (create it first or choose another path)\n',
  },
  {
    name: 'a folder as the output file',
    args: () => ['demo', '--json', tmp],
    exit: 2,
    line: () => `sits: --json ${tmp}: is a folder (give a file name, e.g. out.json)\n`,
  },
  {
    name: 'an output file under /proc',
    args: () => ['demo', '--json', '/proc/forbidden.json'],
    exit: 2,
    line: /^sits: --json \/proc\/forbidden\.json: cannot write: .+ \(choose a writable path\)\n$/,
  },
  {
    name: 'dev up with an unknown scheduler mode (before anything starts)',
    args: () => ['dev', 'up', '--scheduler', 'bogus'],
    exit: 2,
    line: 'sits: --scheduler: want in-process or none, got "bogus" (see sits dev up --help)\n',
  },
  {
    name: 'deploy --out a file',
    args: () => ['deploy', '--out', '/etc/passwd'],
    exit: 2,
    line: 'sits: --out /etc/passwd: is a file, not a folder (give a folder path; it is created if missing)\n',
  },
  {
    name: 'deploy --out below a file',
    args: () => ['deploy', '--out', join(aFile, 'sub')],
    exit: 2,
    line: () => `sits: --out ${join(aFile, 'sub')}: ${aFile} is a file, not a folder (give a folder path; it is created if missing)\n`,
  },
  {
    name: 'deploy --out under /proc (used to spin)',
    args: () => ['deploy', '--out', '/proc/forbidden'],
    exit: 2,
    line: 'sits: --out /proc/forbidden: cannot create folder /proc/forbidden: not possible there (ENOENT) (choose a writable path)\n',
  },
  // kubeconfig
  {
    name: 'no kubeconfig anywhere (explain)',
    args: () => ['explain', 'ns/name'],
    exit: 2,
    line: () =>
      `sits: no kubeconfig found: looked at $KUBECONFIG (unset), ${join(home, '.kube/config')} (missing) and in-cluster (not in a pod) (pass --kubeconfig FILE or set KUBECONFIG; \`sits dev up --kubeconfig FILE\` starts a local cluster)\n`,
  },
  {
    name: 'no kubeconfig anywhere (top)',
    args: () => ['top'],
    exit: 2,
    line: /^sits: no kubeconfig found: .* \(pass --kubeconfig FILE or set KUBECONFIG; .*, or pass --token\)\n$/,
  },
  {
    name: 'a missing --kubeconfig',
    args: () => ['explain', 'ns/name', '--kubeconfig', join(tmp, 'nope.kubeconfig')],
    exit: 2,
    line: () => `sits: --kubeconfig ${join(tmp, 'nope.kubeconfig')}: no such file (check the path, or pass --kubeconfig FILE)\n`,
  },
  {
    name: 'a missing $KUBECONFIG',
    args: () => ['explain', 'ns/name'],
    env: () => env({ KUBECONFIG: join(tmp, 'nope.kubeconfig') }),
    exit: 2,
    line: () => `sits: $KUBECONFIG ${join(tmp, 'nope.kubeconfig')}: no such file (check the path in KUBECONFIG, or pass --kubeconfig FILE)\n`,
  },
  {
    name: 'a binary kubeconfig',
    args: () => ['explain', 'ns/name', '--kubeconfig', binary],
    exit: 2,
    line: () =>
      `sits: --kubeconfig ${binary}: not a kubeconfig (binary data) (give a kubeconfig YAML file, e.g. the one \`sits dev up\` or your cloud CLI writes)\n`,
  },
  {
    name: 'a folder as kubeconfig',
    args: () => ['top', '--kubeconfig', tmp],
    exit: 2,
    line: () => `sits: --kubeconfig ${tmp}: is a folder, not a file (give the kubeconfig file itself, or pass --token)\n`,
  },
  {
    name: 'a kubeconfig that is not YAML',
    args: () => ['explain', 'ns/name', '--kubeconfig', file('broken.kubeconfig', 'a: [\n')],
    exit: 2,
    line: /^sits: --kubeconfig .*broken\.kubeconfig: not a valid kubeconfig: .+ \(fix the file; kubectl config view shows what kubectl reads\)\n$/,
  },
  {
    name: 'a YAML file that is no kubeconfig',
    args: () => ['explain', 'ns/name', '--kubeconfig', file('hello.kubeconfig', 'hello\n')],
    exit: 2,
    line: /^sits: --kubeconfig .*hello\.kubeconfig: not a kubeconfig \(no clusters in it\) \(.+\)\n$/,
  },
  {
    name: 'a plain-HTTP apiserver',
    args: () => ['explain', 'ns/name', '--kubeconfig', file('http.kubeconfig', kubeconfig('http://127.0.0.1:1'))],
    exit: 2,
    line: /^sits: --kubeconfig .*http\.kubeconfig: cluster "c" server http:\/\/127\.0\.0\.1:1 is plain HTTP \(use the apiserver's https:\/\/ address, .+\)\n$/,
  },
  // runtime: the world
  {
    name: 'an unreachable apiserver',
    args: () => ['explain', 'ns/name', '--kubeconfig', unreachable],
    exit: 1,
    line: () => `sits: apiserver https://127.0.0.1:${refused}: connection refused (is the cluster up? the address comes from --kubeconfig ${unreachable})\n`,
  },
  {
    name: 'an unreachable scheduler (top)',
    args: () => ['top', '--token', 't', '--server', `https://127.0.0.1:${refused}`],
    exit: 1,
    line: () => `sits: https://127.0.0.1:${refused}/dashboard/api/v1/cluster: connection refused (is sits run up? --server is its metrics address)\n`,
  },
  {
    name: 'a second demo --serve on a used port',
    args: () => ['demo', '--serve', '--port', String(busyPort)],
    exit: 1,
    line: () =>
      `sits: --port ${busyPort}: address already in use (another sits demo --serve may run there: stop it, or choose another --port; --port 0 picks a free one)\n`,
  },
];

describe.concurrent('every user error is one line, with its exit code and no stack trace', () => {
  it.each(CASES.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const r: SitsRun = await runSits(c.args(), { env: c.env?.() ?? env(), timeoutMs: 60_000 });
    expect(r.err, r.err).toMatch(ERROR_LINE);
    expect(r.err).not.toMatch(/^\s+at /m);
    const line = typeof c.line === 'function' ? c.line() : c.line;
    if (typeof line === 'string') expect(r.err).toBe(line);
    else expect(r.err).toMatch(line);
    expect(r.code, r.err).toBe(c.exit);
    // Nothing was produced: the mistake is found before the work (demo --json used to fail after the whole run).
    expect(r.out).toBe('');
  });
});

describe('--debug and the broken pipe', () => {
  it('--debug adds the stack trace before the same line', async () => {
    const missing = join(tmp, 'nope.kubeconfig');
    const r = await runSits(['explain', 'ns/name', '--kubeconfig', missing, '--debug'], { env: env() });
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/^KubeConfigError: --kubeconfig .*nope\.kubeconfig: no such file\n(\s+at .+\n)+/);
    expect(r.err.endsWith(`sits: --kubeconfig ${missing}: no such file (check the path, or pass --kubeconfig FILE)\n`)).toBe(true);
  });

  it('sits crds | head -c 10 ends quietly with 0 (EPIPE)', async () => {
    const bin = resolve(import.meta.dirname, '../../bin/sits.mjs');
    const r = await new Promise<{ code: string; err: string }>((res) => {
      const child = spawn(
        'bash',
        [
          '-c',
          `"${process.execPath}" "${bin}" crds 2>"${join(tmp, 'epipe.err')}" | head -c 10 >/dev/null; echo -n \${PIPESTATUS[0]}; cat "${join(tmp, 'epipe.err')}" >&2`,
        ],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let out = '';
      let err = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
      child.on('close', () => res({ code: out, err }));
    });
    expect(r).toEqual({ code: '0', err: '' });
  });
});
