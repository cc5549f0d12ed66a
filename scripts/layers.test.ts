// The layer table of eslint.config.js (docs/adr/0040-layers.md) covers every folder under src/, and its
// rules fire: each forbidden import is an error, each allowed one is not, at every depth.
import { readdirSync } from 'node:fs';
import { ESLint } from 'eslint';
import { beforeAll, describe, expect, it } from 'vitest';

const root = new URL('..', import.meta.url);
type Config = { LAYERS: Record<string, string[]>; TEST_IMPORTS: string[]; PURE: string[] };
const { LAYERS, TEST_IMPORTS, PURE } = (await import(new URL('eslint.config.js', root).href)) as Config;
const folders = readdirSync(new URL('src', root), { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name)
  .sort();
const layers = Object.keys(LAYERS).sort();

let eslint: ESLint;
beforeAll(() => {
  eslint = new ESLint({ cwd: root.pathname });
});
/** The messages of linting `code` as if it were the file at `path`. */
async function lint(path: string, code: string): Promise<string[]> {
  const [r] = await eslint.lintText(code, { filePath: new URL(path, root).pathname });
  return (r?.messages ?? []).map((m) => `${m.ruleId}: ${m.message}`);
}
const importOf = (depth: number, folder: string): string => `import { x } from '${'../'.repeat(depth + 1)}${folder}/x.ts';\nexport const y = x;\n`;
const probe = (folder: string, depth: number, test = false): string => `src/${folder}/${'sub/'.repeat(depth)}probe${test ? '.test' : ''}.ts`;

describe('the layer table', () => {
  it('has a rule for every top-level folder of src/, and no rule for a folder that is gone', () => {
    expect(layers).toEqual(folders);
  });

  it('names only folders it has rules for, and no folder may import itself through it', () => {
    for (const [folder, allowed] of Object.entries(LAYERS)) {
      for (const a of allowed) expect(layers, `${folder} allows ${a}`).toContain(a);
      expect(allowed).not.toContain(folder);
    }
    for (const f of [...TEST_IMPORTS, ...PURE]) expect(layers).toContain(f);
  });

  it('has no cycle: the layers can be ordered so that each imports only the ones before it', () => {
    const done = new Set<string>();
    const visiting = new Set<string>();
    const visit = (f: string, path: string[]): void => {
      if (done.has(f)) return;
      if (visiting.has(f)) throw new Error(`layer cycle: ${[...path, f].join(' → ')}`);
      visiting.add(f);
      for (const a of LAYERS[f] ?? []) visit(a, [...path, f]);
      visiting.delete(f);
      done.add(f);
    };
    for (const f of layers) visit(f, []);
    expect(done.size).toBe(layers.length);
  });
});

describe('the layer rules', () => {
  it('reject every import of a folder outside the layer, at depth 0 to 2, naming the rule', async () => {
    for (const folder of layers) {
      const forbidden = layers.filter((f) => f !== folder && !(LAYERS[folder] ?? []).includes(f));
      for (const depth of [0, 1, 2]) {
        for (const other of forbidden) {
          const m = await lint(probe(folder, depth), importOf(depth, other));
          expect(
            m.filter((x) => x.startsWith('no-restricted-imports')),
            `${probe(folder, depth)} → ${other}`,
          ).toEqual([expect.stringContaining(`${folder} may import only`)]);
        }
      }
    }
  });

  it('accept the imports the layer allows, and imports inside the folder', async () => {
    for (const folder of layers) {
      for (const depth of [0, 2]) {
        for (const other of LAYERS[folder] ?? [])
          expect(await lint(probe(folder, depth), importOf(depth, other)), `${probe(folder, depth)} → ${other}`).toEqual([]);
        expect(await lint(probe(folder, depth), `import { x } from './x.ts';\nexport const y = x;\n`)).toEqual([]);
      }
    }
  });

  it('let tests import harness, app and src/testing too, and nothing else', async () => {
    expect(await lint(probe('sim', 1, true), importOf(1, 'harness'))).toEqual([]);
    expect(await lint(probe('core', 0, true), importOf(0, 'testing'))).toEqual([]);
    expect(await lint(probe('kube', 0, true), importOf(0, 'app'))).toEqual([]);
    expect(await lint(probe('deploy', 0, true), importOf(0, 'server'))).toEqual([
      expect.stringContaining('deploy tests may import only core, api, spec, kube, harness, app, testing'),
    ]);
    expect(await lint(probe('controllers', 1, true), importOf(1, 'kube'))).toEqual([expect.stringContaining('controllers tests may import only')]);
  });

  it('keep core and controllers pure: no clock, randomness, environment, timers or node: modules; adapters may', async () => {
    const impure = [
      'export const t = Date.now();',
      'export const t = new Date();',
      'export const r = Math.random();',
      'export const e = process.env.HOME;',
      'export const p = performance.now();',
      'setTimeout(() => undefined, 1);',
      "import { readFileSync } from 'node:fs';\nexport const f = readFileSync;",
      "import { KubeConfig } from '@kubernetes/client-node';\nexport const k = KubeConfig;",
    ];
    for (const folder of PURE) for (const code of impure) expect(await lint(probe(folder, 1), code), `${folder}: ${code}`).not.toEqual([]);
    for (const code of impure) expect(await lint(probe('kube', 0), code), code).toEqual([]);
    // Tests of the core may use the clock and the file system.
    expect(await lint(probe('core', 0, true), impure[0] as string)).toEqual([]);
  });
});

describe('who may skip the spine', () => {
  const call =
    "import type { Scheduler } from '../../core/framework/scheduler.ts';\nexport const f = (s: Scheduler): unknown => [s.schedulePod({} as never), s.scheduleGang({} as never)];\n";
  it('direct placement is an error in a host outside DIRECT_PLACEMENT_HOSTS, pure folders keeping their purity rules', async () => {
    for (const path of ['src/kube/sub/probe.ts', 'src/bench/sub/probe.ts', 'src/controllers/sub/probe.ts']) {
      const msgs = await lint(path, call);
      expect(
        msgs.filter((m) => m.startsWith('no-restricted-properties') && m.includes('spine')),
        path,
      ).toHaveLength(2);
    }
    const pure = await lint('src/controllers/sub/probe.ts', 'export const t = Date.now();\n');
    expect(pure.some((m) => m.includes('Clock port'))).toBe(true);
  });
  it('is allowed in the listed experiments, in tests and in the core', async () => {
    for (const path of ['src/bench/fgd/run.ts', 'src/app/demo.ts', 'src/bench/sub/probe.test.ts', 'src/core/sub/probe.ts']) {
      const msgs = await lint(path, call.replace('../../core/', path.startsWith('src/core') ? '../' : '../../core/'));
      expect(
        msgs.filter((m) => m.includes('spine')),
        path,
      ).toEqual([]);
    }
  });
});
