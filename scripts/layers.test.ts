// The layer table of eslint.config.js (docs/adr/0040-layers.md) covers every folder under src/, and its
// rules fire: each forbidden import is an error, each allowed one is not, at every depth.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { ESLint } from 'eslint';
import ts from 'typescript';
import { beforeAll, describe, expect, it } from 'vitest';

const root = new URL('..', import.meta.url);
type Config = { LAYERS: Record<string, string[]>; TEST_IMPORTS: string[]; PURE: string[]; CORE_LOWER_ROOMS: string[] };
const { LAYERS, TEST_IMPORTS, PURE, CORE_LOWER_ROOMS } = (await import(new URL('eslint.config.js', root).href)) as Config;
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

  it('let tests import harness, live, app, kits and src/testing too, and nothing else', async () => {
    expect(await lint(probe('sim', 1, true), importOf(1, 'harness'))).toEqual([]);
    expect(await lint(probe('core', 0, true), importOf(0, 'testing'))).toEqual([]);
    expect(await lint(probe('kube', 0, true), importOf(0, 'app'))).toEqual([]);
    expect(await lint(probe('core', 1, true), importOf(1, 'kits'))).toEqual([]);
    expect(await lint(probe('deploy', 0, true), importOf(0, 'server'))).toEqual([
      expect.stringContaining('deploy tests may import only core, api, formats, kube, harness, live, app, kits, testing'),
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

/** Relative imports (and re-exports) of every non-test .ts file under `dir`, as repo-relative paths, by the TypeScript scanner. */
function importGraph(dir: string): Map<string, string[]> {
  const base = root.pathname;
  const graph = new Map<string, string[]>();
  const files = readdirSync(join(base, dir), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
    .map((f) => join(dir, f));
  for (const file of files) {
    const { importedFiles } = ts.preProcessFile(readFileSync(join(base, file), 'utf8'), true, true);
    const deps = importedFiles.filter((i) => i.fileName.startsWith('.')).map((i) => relative(base, resolve(base, dirname(file), i.fileName)));
    graph.set(file, deps);
  }
  return graph;
}

/** The first import cycle found by depth-first search, as the files around it; undefined when there is none. */
function findCycle(graph: Map<string, string[]>): string[] | undefined {
  const state = new Map<string, 'open' | 'done'>();
  const path: string[] = [];
  const visit = (f: string): string[] | undefined => {
    if (state.get(f) === 'done') return undefined;
    if (state.get(f) === 'open') return [...path.slice(path.indexOf(f)), f];
    state.set(f, 'open');
    path.push(f);
    for (const d of graph.get(f) ?? []) {
      const c = visit(d);
      if (c !== undefined) return c;
    }
    path.pop();
    state.set(f, 'done');
    return undefined;
  };
  for (const f of [...graph.keys()].sort()) {
    const c = visit(f);
    if (c !== undefined) return c;
  }
  return undefined;
}

describe("the core's rooms", () => {
  it('the lower rooms never import core/plugins/, at depth 1 and 2, naming the rule; their tests and the upper rooms may', async () => {
    for (const room of CORE_LOWER_ROOMS) {
      for (const [path, spec] of [
        [`src/core/${room}/probe.ts`, '../plugins/fit/fit.ts'],
        [`src/core/${room}/probe.ts`, '../../core/plugins/fit/fit.ts'],
        [`src/core/${room}/sub/probe.ts`, '../../plugins/registry.ts'],
      ] as const) {
        const m = await lint(path, `import { x } from '${spec}';\nexport const y = x;\n`);
        expect(m, `${path} → ${spec}`).toEqual([expect.stringContaining('never import core/plugins/')]);
      }
      expect(await lint(`src/core/${room}/probe.test.ts`, "import { x } from '../plugins/fit/fit.ts';\nexport const y = x;\n")).toEqual([]);
    }
    for (const room of ['actions', 'spine', 'plugins/fit'])
      expect(
        await lint(
          `src/core/${room}/probe.ts`,
          `import { x } from '${room === 'plugins/fit' ? '../registry.ts' : '../plugins/registry.ts'}';\nexport const y = x;\n`,
        ),
      ).toEqual([]);
  });

  it('the lower rooms keep the layer and purity rules', async () => {
    expect(await lint('src/core/model/probe.ts', importOf(1, 'kube'))).toEqual([expect.stringContaining('core may import only')]);
    expect(await lint('src/core/framework/sub/probe.ts', "import { readFileSync } from 'node:fs';\nexport const f = readFileSync;\n")).toEqual([
      expect.stringContaining('core is pure'),
    ]);
  });

  it('src/core has no import cycle (type imports and re-exports included)', () => {
    const graph = importGraph('src/core');
    // The scanner sees the imports: the framework imports the model, and a plugin its framework.
    expect(graph.get('src/core/framework/scheduler.ts')).toContain('src/core/model/pod.ts');
    expect(graph.get('src/core/plugins/fit/fit.ts')).toContain('src/core/framework/reasons.ts');
    expect(findCycle(graph)).toBeUndefined();
  });

  it('the cycle search finds a cycle when there is one', () => {
    const g = new Map([
      ['a', ['b']],
      ['b', ['c']],
      ['c', ['a']],
      ['d', ['a']],
    ]);
    expect(findCycle(g)).toEqual(['a', 'b', 'c', 'a']);
    expect(
      findCycle(
        new Map([
          ['a', ['b']],
          ['b', []],
        ]),
      ),
    ).toBeUndefined();
  });
});
