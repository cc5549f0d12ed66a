#!/usr/bin/env node
// `npm run build`: the product compiled to JavaScript in dist/ by esbuild (ADR 0171): ESM, one entry per program
// (the CLI, and the worker thread and child process it starts), split into chunks that load when a command needs
// them; no TypeScript loader at run time.
//
//   node scripts/build.mjs            build dist/
//   node scripts/build.mjs --if-stale build only when a source file is newer than dist/BUILD-INFO.json
//
// Files keep reading their neighbours relative to where they were written (web/, a .proto beside its loader,
// tools/ for `sits dev`): each module's `import.meta.url`/`import.meta.dirname` is rewritten to its source location,
// expressed relative to the bundle, so dist/ works in the checkout and in the image (which keeps those paths).
// Plain Node ESM.
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build, version as esbuildVersion } from 'esbuild';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const DIST = join(ROOT, 'dist');
const INFO = join(DIST, 'BUILD-INFO.json');

/** dist/<name>.js ← source. */
export const ENTRY_POINTS = {
  sits: 'src/cli/main.ts',
  'grid-worker': 'src/bench/grid/worker.ts',
  'kube-bench-child': 'src/bench/kube/sits-child.ts',
  'chaos-replica': 'src/bench/chaos/replica.ts',
};

/**
 * Where source code starts one of the entry points by a URL beside itself (a tsx-registering shim or a .ts file in
 * source): the bundle starts the bundled entry instead.
 */
const ENTRY_URLS = {
  'src/bench/grid/pool.ts': { './worker-entry.mjs': 'grid-worker.js' },
  'src/bench/kube/run.ts': { './sits-child.ts': 'kube-bench-child.js' },
  'src/bench/chaos/run.ts': { './replica.ts': 'chaos-replica.js' },
};

/**
 * Packages not bundled: read from node_modules at run time (highs loads its .wasm beside its JS, chart.js is read
 * as a file for offline HTML) or only ever loaded by development commands (a dynamic import that fails cleanly
 * without them). The image ships the first group (scripts/image.mjs).
 */
export const RUNTIME_EXTERNALS = ['highs', 'chart.js'];
const DEV_EXTERNALS = [
  'playwright-core',
  'node-llama-cpp',
  'tsx',
  '@lydell/node-pty',
  'vitest',
  'typescript',
  'esbuild',
  'assemblyscript',
  'wabt',
  'fast-check',
];

function newestSource() {
  let newest = 0;
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (!e.name.includes('.test.')) newest = Math.max(newest, statSync(p).mtimeMs);
    }
  };
  walk(join(ROOT, 'src'));
  for (const f of ['package.json', 'package-lock.json', 'scripts/build.mjs']) newest = Math.max(newest, statSync(join(ROOT, f)).mtimeMs);
  return newest;
}

export function isStale() {
  if (!existsSync(INFO)) return true;
  return newestSource() > statSync(INFO).mtimeMs;
}

const toPosix = (p) => p.split(sep).join('/');

/** The esbuild plugin that keeps source-relative URLs working from dist/ (see the header). */
const sourceLocations = {
  name: 'sits-source-locations',
  setup(b) {
    b.onLoad({ filter: /[\\/]src[\\/].*\.(ts|mjs)$/ }, (args) => {
      let text = readFileSync(args.path, 'utf8');
      if (!text.includes('import.meta')) return undefined;
      const rel = toPosix(relative(ROOT, args.path));
      for (const [from, to] of Object.entries(ENTRY_URLS[rel] ?? {})) {
        const needle = `new URL('${from}', import.meta.url)`;
        if (!text.includes(needle)) throw new Error(`${rel}: expected ${needle} (scripts/build.mjs ENTRY_URLS)`);
        text = text.replaceAll(needle, `new URL('./${to}', __SITS_BUNDLE_URL__)`);
      }
      // dist/<entry>.js is one folder below the root: the source file is at '../<rel>' from it.
      const fromBundle = `../${rel}`;
      const dirFromBundle = `../${toPosix(dirname(rel))}`;
      text = text
        .replaceAll('import.meta.url', `new URL(${JSON.stringify(fromBundle)}, import.meta.url).href`)
        .replaceAll('import.meta.dirname', `__sitsFileURLToPath(new URL(${JSON.stringify(dirFromBundle)}, import.meta.url))`)
        .replaceAll('import.meta.filename', `__sitsFileURLToPath(new URL(${JSON.stringify(fromBundle)}, import.meta.url))`)
        .replaceAll('__SITS_BUNDLE_URL__', 'import.meta.url');
      return { contents: text, loader: args.path.endsWith('.ts') ? 'ts' : 'js' };
    });
  },
};

/** Builds into a scratch folder that replaces dist/ only when complete. */
export async function buildDist({ quiet = false } = {}) {
  const started = Date.now();
  const out = join(ROOT, `.dist-tmp-${process.pid}`);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const result = await build({
    entryPoints: Object.fromEntries(Object.entries(ENTRY_POINTS).map(([k, v]) => [k, join(ROOT, v)])),
    outdir: out,
    // Aliases and relative paths resolve from the project, whatever folder `sits` was started in.
    absWorkingDir: ROOT,
    // Chunks beside the entries: every output file is one folder below the root (the source locations rely on it).
    splitting: true,
    chunkNames: '[name]-[hash]',
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node24',
    sourcemap: 'linked',
    sourcesContent: false,
    legalComments: 'linked',
    metafile: true,
    logLevel: quiet ? 'error' : 'warning',
    external: [...RUNTIME_EXTERNALS, ...DEV_EXTERNALS],
    // node-fetch 2's whatwg-url requires Node's deprecated built-in punycode (DEP0040 on every start): the package.
    alias: { punycode: 'punycode/' },
    // Bundled CommonJS packages call require(); ESM output has none of its own.
    banner: {
      js: [
        "import { createRequire as __sitsCreateRequire } from 'node:module';",
        "import { fileURLToPath as __sitsFileURLToPath } from 'node:url';",
        'const require = __sitsCreateRequire(import.meta.url);',
      ].join('\n'),
    },
    plugins: [sourceLocations],
  });
  const outputs = Object.entries(result.metafile.outputs)
    .filter(([f]) => f.endsWith('.js'))
    .map(([f, o]) => ({ file: `dist/${toPosix(relative(out, resolve(ROOT, f)))}`, bytes: o.bytes }))
    .sort((a, b) => a.file.localeCompare(b.file));
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
  writeFileSync(join(out, 'BUILD-INFO.json'), `${JSON.stringify({ version: pkg.version, esbuild: esbuildVersion, outputs }, null, 2)}\n`);
  const old = join(ROOT, `.dist-old-${process.pid}`);
  if (existsSync(DIST)) renameSync(DIST, old);
  renameSync(out, DIST);
  rmSync(old, { recursive: true, force: true });
  if (!quiet) {
    const entries = outputs.filter((o) => Object.keys(ENTRY_POINTS).some((e) => o.file === `dist/${e}.js`));
    const total = outputs.reduce((n, o) => n + o.bytes, 0);
    process.stderr.write(
      `built dist/ in ${((Date.now() - started) / 1000).toFixed(1)} s: ${outputs.length} files, ${(total / 1e6).toFixed(1)} MB (${entries.map((o) => `${o.file} ${(o.bytes / 1e3).toFixed(0)} kB`).join(', ')})\n`,
    );
  }
  return outputs;
}

/**
 * Builds dist/ when it is missing or older than the sources, one builder at a time (a lock folder holding its
 * pid; a dead builder's lock is taken over): what bin/sits.mjs calls in a source checkout.
 */
export async function ensureBuilt() {
  if (!isStale()) return;
  const lock = join(ROOT, '.dist-lock');
  for (;;) {
    try {
      mkdirSync(lock);
      writeFileSync(join(lock, 'pid'), String(process.pid));
      break;
    } catch (e) {
      if (e.code !== 'EEXIST') throw e;
    }
    let owner = NaN;
    try {
      owner = Number(readFileSync(join(lock, 'pid'), 'utf8'));
    } catch {
      // created, pid not written yet
    }
    const age = Date.now() - (statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
    if ((owner > 0 && !alive(owner)) || (!(owner > 0) && age > 30_000)) rmSync(lock, { recursive: true, force: true });
    else await new Promise((r) => setTimeout(r, 200));
  }
  try {
    if (isStale()) {
      if (process.stderr.isTTY) process.stderr.write('sits: building dist/ from src/ (npm run build)…\n');
      await buildDist({ quiet: true });
    }
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const ifStale = process.argv.includes('--if-stale');
  if (!ifStale || isStale()) await buildDist();
}
