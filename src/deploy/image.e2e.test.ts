// The image as users run it (issue 30, ADR 0172): `scripts/image.mjs` twice (same digest), unpacked into a root
// filesystem and run there as its user on a read-only root; only what `sits` needs at run time inside; the
// Containerfile in step with it.
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureOciTools } from '../harness/oci-registry.ts';
import { buildImage, runInImage, unpackImage, type BundleConfig } from './testing/image.ts';

const ROOT = new URL('../..', import.meta.url).pathname;
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const dir = mkdtempSync(join(tmpdir(), 'sits-image-test-'));
let ociBin: string;
let digest: string;
let rootfs: string;
let config: BundleConfig;

function duBytes(path: string): number {
  let n = 0;
  for (const e of readdirSync(path, { withFileTypes: true })) {
    const p = join(path, e.name);
    if (e.isDirectory()) n += duBytes(p);
    else if (e.isFile()) n += statSync(p).size;
  }
  return n;
}

beforeAll(async () => {
  ociBin = await ensureOciTools();
  digest = await buildImage(ociBin, join(dir, 'layout'), join(dir, 'sits-image.oci.tar'));
  ({ rootfs, config } = await unpackImage(ociBin, join(dir, 'layout'), VERSION, join(dir, 'bundle')));
});

afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('the SITS image', () => {
  it('is reproducible: a second build of the same tree has the same digest', async () => {
    const again = await buildImage(ociBin, join(dir, 'layout-2'), join(dir, 'again.oci.tar'));
    expect(again).toBe(digest);
    expect(readFileSync(join(dir, 'again.oci.tar')).equals(readFileSync(join(dir, 'sits-image.oci.tar')))).toBe(true);
  });

  it('runs `sits` as a non-root user on a read-only root: --version, run --help, lint', async () => {
    expect(config.process.user).toEqual({ uid: 65532, gid: 65532 });
    expect(config.process.args).toEqual(['/usr/local/bin/node', '/app/bin/sits.mjs', '--help']);
    const version = await runInImage(rootfs, config, ['--version']);
    expect(version, version.err).toMatchObject({ code: 0, out: `${VERSION}\n` });
    const help = await runInImage(rootfs, config, ['run', '--help']);
    expect(help.code, help.err).toBe(0);
    expect(help.out).toContain('Usage: sits run');
    // A mistake lint knows (GPUs chosen by hand): found, with its place in the file, exit 1.
    writeFileSync(
      join(rootfs, 'pod.yaml'),
      'apiVersion: v1\nkind: Pod\nmetadata: {name: bench}\nspec:\n  containers:\n  - name: cuda\n    image: nvidia/cuda:12.2-base\n    env:\n    - {name: NVIDIA_VISIBLE_DEVICES, value: "0"}\n',
    );
    const lint = await runInImage(rootfs, config, ['lint', '/pod.yaml']);
    expect(lint.code, lint.err).toBe(1);
    expect(lint.out).toContain('/pod.yaml:9:38: error hand-set-visible-devices');
    // Nothing under / is writable, not even by the image's own files' owner (root owns them; the user is 65532).
    const write = await runInImage(rootfs, config, [], ['/usr/local/bin/node', '-e', "require('node:fs').writeFileSync('/app/x', '')"]);
    expect(write.code).not.toBe(0);
    expect(write.err).toMatch(/EROFS|EACCES/);
  });

  it('holds only what sits needs at run time, in ≤ 250 MB', () => {
    const bytes = duBytes(rootfs);
    expect(bytes).toBeLessThanOrEqual(250e6);
    const modules = readdirSync(join(rootfs, 'app', 'node_modules')).sort();
    expect(modules).toEqual(['@kurkle', 'chart.js', 'highs']);
    // No TypeScript, no test stand-ins, no tests in /app.
    const files: string[] = [];
    const walk = (p: string, rel: string): void => {
      for (const e of readdirSync(p, { withFileTypes: true })) {
        if (e.isDirectory()) walk(join(p, e.name), `${rel}${e.name}/`);
        else files.push(`${rel}${e.name}`);
      }
    };
    walk(join(rootfs, 'app'), '');
    expect(files.filter((f) => f.endsWith('.ts') || f.includes('.test.') || f.includes('harness/llm'))).toEqual([]);
    expect(files.filter((f) => f.startsWith('src/')).sort()).toEqual(['src/node/deviceplugin/api.proto', 'src/wasm/plugin-worker.mjs']);
  });

  it('matches the Containerfile: entrypoint, default command, user and environment', () => {
    const lines = readFileSync(join(ROOT, 'Containerfile'), 'utf8').split('\n');
    const last = (op: string): string =>
      lines
        .filter((l) => l.startsWith(`${op} `))
        .at(-1)
        ?.slice(op.length + 1) ?? '';
    expect(JSON.parse(last('ENTRYPOINT'))).toEqual(config.process.args.slice(0, 2));
    expect(JSON.parse(last('CMD'))).toEqual(config.process.args.slice(2));
    expect(last('USER')).toBe('65532:65532');
    expect(last('WORKDIR')).toBe(config.process.cwd);
    for (const kv of last('ENV').split(' ')) expect(config.process.env).toContain(kv);
  });
});
