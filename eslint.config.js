// Lint rules that keep the architecture honest: every folder under src/ imports only the folders of its
// layer (docs/adr/0040-layers.md), and the pure core never reaches for a clock, randomness, the
// environment or the network.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { housePlugin, MAX_CLASS_FIELDS } from './scripts/eslint-house-rules.mjs';

/**
 * The layers: the folders under src/ each folder may import (besides itself). Every top-level folder of
 * src/ must be listed (scripts/layers.test.ts fails otherwise).
 */
export const LAYERS = {
  core: [],
  api: ['core'],
  // LLM serving (issue 12): runtimes as data, engine metrics, the engine model and the autoscaling policies.
  // Pure like the core, one step above it: the InferenceService controller and the BatchInferenceJob build on it.
  serving: ['core', 'api'],
  // Input formats: the cluster, workload, scheduler-config and storage files, YAML with positions (was src/spec).
  formats: ['core', 'api'],
  sim: ['core', 'api', 'formats'],
  kube: ['core', 'api', 'formats'],
  controllers: ['core', 'api', 'serving'],
  // The WASM strategy plugin host (issue 13 Deliver 9): a worker thread per plugin; the ABI itself is in controllers.
  wasm: ['core', 'api', 'controllers', 'serving'],
  // Guard-rail rules and their engine (issue 16); webhook: the admission server that runs them.
  guard: ['core', 'api', 'formats'],
  webhook: ['core', 'api', 'formats', 'kube', 'guard'],
  // The node side: topology agent and device plugin (issue 11).
  node: ['core', 'api', 'formats', 'kube'],
  // The test harness (also started by dev mode and the kube bench) may use the shared test helpers.
  harness: ['core', 'api', 'formats', 'kube', 'testing'],
  deploy: ['core', 'api', 'formats', 'kube'],
  // The live loops and servers beside the scheduler (issue 35): the serving loop and GPU lending, the batch worker
  // and the BatchInferenceJob controller's ports, the activator, the scheduler watch. Composed by app/.
  live: ['core', 'api', 'formats', 'kube', 'controllers', 'serving', 'wasm', 'deploy'],
  app: ['core', 'api', 'formats', 'sim', 'kube', 'controllers', 'serving', 'harness', 'deploy', 'guard', 'webhook', 'node', 'wasm', 'live'],
  // Test kits: the e2e set-ups that start a dev cluster with SITS in it, shared by tests and the benches that measure one.
  kits: ['core', 'api', 'formats', 'kube', 'controllers', 'serving', 'harness', 'deploy', 'live', 'app', 'testing'],
  bench: ['core', 'api', 'formats', 'sim', 'kube', 'controllers', 'serving', 'harness', 'deploy', 'live', 'app', 'kits', 'guard', 'webhook', 'wasm'],
  server: ['core', 'api', 'formats', 'sim', 'kube', 'controllers', 'harness', 'deploy', 'live', 'app'],
  // Helpers every folder's tests may use (port contract suites, headless Chromium): only the core's ports.
  testing: ['core'],
  cli: [
    'core',
    'api',
    'formats',
    'sim',
    'kube',
    'controllers',
    'serving',
    'harness',
    'deploy',
    'live',
    'app',
    'kits',
    'bench',
    'server',
    'testing',
    'guard',
    'webhook',
    'node',
    'wasm',
  ],
};

/** What tests (*.test.ts) may import on top of their folder's layer. */
export const TEST_IMPORTS = ['harness', 'live', 'app', 'kits', 'testing'];

/** Folders whose code is pure: no clock, randomness, environment, timers or I/O. */
export const PURE = ['core', 'controllers', 'serving'];

const TOP = Object.keys(LAYERS);

const impureInCore = [
  { object: 'Date', property: 'now', message: 'core is pure: take time from the Clock port' },
  { object: 'Math', property: 'random', message: 'core is pure: take randomness from the Rng port' },
  { object: 'process', property: 'env', message: 'core is pure: configuration comes in as values' },
  { object: 'performance', property: 'now', message: 'core is pure: take time from the Clock port' },
];
const pureGlobals = [
  'setTimeout',
  'setInterval',
  'setImmediate',
  'clearTimeout',
  'clearInterval',
  'clearImmediate',
  'queueMicrotask',
  'fetch',
  'performance',
  'process',
  'crypto',
].map((name) => ({ name, message: `core is pure: no ${name} (clock, timers, I/O and the process belong to adapters)` }));
const pureImports = [
  {
    group: [
      'node:*',
      'fs',
      'fs/*',
      'path',
      'http',
      'https',
      'net',
      'os',
      'child_process',
      'crypto',
      'worker_threads',
      'perf_hooks',
      'timers',
      'timers/*',
      'url',
    ],
    message: 'core is pure: I/O belongs to adapters',
  },
  { group: ['@kubernetes/*'], message: 'core is pure: it never touches the cluster' },
];

/**
 * The core's rooms below its plugins (docs/architecture.md, "The core's rooms"): their code never imports
 * core/plugins/, so the dependency runs plugins → framework → snapshot → model and the import circle of issue
 * 35 cannot come back (scripts/layers.test.ts also checks src/core for cycles). Their tests may use plugins.
 */
export const CORE_LOWER_ROOMS = ['model', 'snapshot', 'framework', 'estimate', 'queue', 'statement'];
const lowerRoomMessage = `core rooms (docs/architecture.md): ${CORE_LOWER_ROOMS.join(', ')} never import core/plugins/ (plugins build on them)`;

/** Product code: what the house-size rules cover (tests may be long and wide; nothing linted here is generated). */
export const PRODUCT_FILES = ['src/**/*.ts', 'src/**/*.mjs', 'scripts/**/*.ts', 'scripts/**/*.mjs', 'bin/**/*.mjs'];
/** Longest function, in lines of code (issue 35): a longer one is several steps that want names of their own. */
export const MAX_FUNCTION_LINES = 150;
export const HOUSE_RULES = {
  'max-lines-per-function': ['error', { max: MAX_FUNCTION_LINES, skipBlankLines: true, skipComments: true, IIFEs: true }],
  'house/max-class-fields': ['error', { max: MAX_CLASS_FIELDS }],
};

/**
 * Files exempt from those limits, each with its reason: none since issue 35 split the last ones. An entry is a
 * debt, not a style choice.
 */
export const LONG_FUNCTION_ALLOWED = [];
export const MANY_FIELDS_ALLOWED = [];

const list = (xs) => (xs.length === 0 ? 'nothing else' : xs.join(', '));
const esc = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * One config object per folder, depth and kind (product or test), so that each file gets exactly one
 * no-restricted-imports setting (ESLint replaces, not merges, rule options). A relative import leaves its
 * folder only by climbing to src/: from src/<folder>/<d dirs>/file.ts that is (d+1) × '../', so the
 * pattern matches exactly the imports that reach another top-level folder. The core's lower rooms get their own
 * object per depth (the same patterns plus core/plugins/), and the generic core object ignores them.
 */
function layerConfigs() {
  const out = [];
  const MAX_DEPTH = 8;
  for (const folder of TOP) {
    const pure = PURE.includes(folder);
    for (const test of [false, true]) {
      const allowed = test ? [...new Set([...LAYERS[folder], ...TEST_IMPORTS])] : LAYERS[folder];
      const forbidden = TOP.filter((f) => f !== folder && !allowed.includes(f));
      const message = `layers (docs/adr/0040-layers.md): ${folder}${test ? ' tests' : ''} may import only ${list(allowed)}`;
      for (let depth = 0; depth < MAX_DEPTH; depth++) {
        const dir = `src/${folder}/${'*/'.repeat(depth)}`;
        const patterns = forbidden.length === 0 ? [] : [{ regex: `^(\\./)?(\\.\\./){${depth + 1}}(${forbidden.map(esc).join('|')})(/|$)`, message }];
        if (pure && !test) patterns.push(...pureImports);
        if (patterns.length === 0) continue;
        // From src/core/<room>/<depth-1 dirs>/file.ts, `depth` × '../' reaches src/core/.
        const rooms = folder === 'core' && !test && depth >= 1 ? CORE_LOWER_ROOMS.map((r) => `src/core/${r}/${'*/'.repeat(depth - 1)}`) : [];
        out.push({
          files: test ? [`${dir}*.test.ts`] : [`${dir}*.ts`, `${dir}*.mjs`],
          ...(test ? {} : { ignores: ['**/*.test.ts', ...rooms.map((r) => `${r}*.ts`)] }),
          rules: { 'no-restricted-imports': ['error', { patterns }] },
        });
        if (rooms.length === 0) continue;
        const toPlugins = { regex: `^(\\./)?((\\.\\./){${depth}}|(\\.\\./){${depth + 1}}core/)plugins(/|$)`, message: lowerRoomMessage };
        out.push({
          files: rooms.map((r) => `${r}*.ts`),
          ignores: ['**/*.test.ts'],
          rules: { 'no-restricted-imports': ['error', { patterns: [...patterns, toPlugins] }] },
        });
      }
    }
  }
  return out;
}

/**
 * Hosts that may call the scheduler's placement directly (`schedulePod`/`scheduleGang`) instead of going through
 * the spine (`SchedulingSpine.cycle`): placement experiments whose protocol is "each unit, in arrival order, placed
 * now or skipped" with no queue, fair share, preemption or reservation (docs/architecture.md, "Who may skip the
 * spine"). Every other host goes through the spine; the core itself (the cycle, the scheduler) is exempt.
 */
export const DIRECT_PLACEMENT_HOSTS = [
  'src/app/demo.ts',
  'src/app/schedule-batch.ts',
  'src/app/queue-scenario*.ts',
  'src/bench/fgd/run.ts',
  'src/bench/throughput/run.ts',
  'src/bench/training/training-bench.ts',
];
const directPlacement = ['schedulePod', 'scheduleGang'].map((property) => ({
  property,
  message: 'hosts go through the spine (SchedulingSpine.cycle); direct placement is for the experiments in DIRECT_PLACEMENT_HOSTS (docs/architecture.md)',
}));

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', 'web/vendor/**', 'bench/results/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { console: 'readonly', process: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', URL: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
      'no-restricted-exports': ['error', { restrictDefaultExports: { direct: true, named: true, defaultFrom: true, namedFrom: true, namespaceFrom: true } }],
    },
  },
  ...layerConfigs(),
  // The house stays small (issue 35): no function over MAX_FUNCTION_LINES, no class over MAX_CLASS_FIELDS fields.
  { files: PRODUCT_FILES, ignores: ['**/*.test.ts'], plugins: { house: housePlugin }, rules: HOUSE_RULES },
  ...(LONG_FUNCTION_ALLOWED.length === 0 ? [] : [{ files: LONG_FUNCTION_ALLOWED, rules: { 'max-lines-per-function': 'off' } }]),
  // ESLint rejects an empty `files`: the entry goes once the list is empty.
  ...(MANY_FIELDS_ALLOWED.length === 0 ? [] : [{ files: MANY_FIELDS_ALLOWED, rules: { 'house/max-class-fields': 'off' } }]),
  {
    files: PURE.map((f) => `src/${f}/**/*.ts`),
    // Controllers are pure definitions; the impure runner that drives them is kube/controllers/controller-runner.ts.
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-properties': ['error', ...impureInCore],
      'no-restricted-globals': ['error', ...pureGlobals],
      'no-restricted-syntax': [
        'error',
        { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: 'core is pure: take time from the Clock port' },
      ],
    },
  },
  // Direct placement outside the core: the pure folders keep their purity rules in the same option list
  // (ESLint replaces, not merges, a rule's options).
  {
    files: TOP.filter((f) => f !== 'core').map((f) => `src/${f}/**/*.ts`),
    ignores: ['**/*.test.ts', ...DIRECT_PLACEMENT_HOSTS],
    rules: { 'no-restricted-properties': ['error', ...directPlacement] },
  },
  {
    files: PURE.filter((f) => f !== 'core').map((f) => `src/${f}/**/*.ts`),
    ignores: ['**/*.test.ts', ...DIRECT_PLACEMENT_HOSTS],
    rules: { 'no-restricted-properties': ['error', ...impureInCore, ...directPlacement] },
  },
);
