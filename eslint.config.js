// Lint rules that keep the architecture honest: the pure core never reaches for a clock,
// randomness, the environment or the network, and imports only other core modules.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const impureInCore = [
  { object: 'Date', property: 'now', message: 'core is pure: take time from the Clock port' },
  { object: 'Math', property: 'random', message: 'core is pure: take randomness from the Rng port' },
  { object: 'process', property: 'env', message: 'core is pure: configuration comes in as values' },
  { object: 'performance', property: 'now', message: 'core is pure: take time from the Clock port' },
];

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
  {
    files: ['src/core/**/*.ts', 'src/controllers/**/*.ts'],
    // Controllers are pure definitions; the impure runner that drives them is kube/controller-runner.ts.
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-properties': ['error', ...impureInCore],
      'no-restricted-globals': ['error', { name: 'setTimeout', message: 'core is pure' }, { name: 'setInterval', message: 'core is pure' }, { name: 'fetch', message: 'core is pure' }],
      'no-restricted-imports': ['error', { patterns: [
        { group: ['node:*', 'fs', 'path', 'http', 'https', 'os', 'child_process'], message: 'core is pure: I/O belongs to adapters' },
        { group: ['**/sim/**', '**/kube/**', '**/server/**', '**/cli/**', '**/app/**'], message: 'core imports only core' },
        { group: ['@kubernetes/*'], message: 'core never touches the cluster' },
      ] }],
    },
  },
);
