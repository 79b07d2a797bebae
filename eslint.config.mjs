import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX, { createNodeResolver } from 'eslint-plugin-import-x';
import { builtinModules } from 'node:module';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((name) => `node:${name}`)];

export default tseslint.config(
  // test/integration/client/ is an integrator's program, compiled by its test against types generated from
  // the served document (test/integration/generated-client.test.ts): without them it cannot be read.
  { ignores: ['node_modules/', 'dist/', 'coverage/', '.data/', 'test/unit/fixtures/', 'test/integration/client/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  {
    // No import cycles: a module that needs another's work calls its service or repository, and nothing
    // below calls back up. Type-only imports are erased and do not count.
    files: ['**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      'import-x/extensions': ['.ts', '.js'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/resolver-next': [createNodeResolver({ extensions: ['.ts', '.js', '.json'] })],
    },
    rules: { 'import-x/no-cycle': ['error', { ignoreExternal: true }] },
  },
  {
    // Pure domain code is the bottom layer: it imports nothing of the application above it.
    files: ['src/domain/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [...nodeBuiltins, 'knex', 'pg', 'pino', 'express'].map((name) => ({ name, message: 'src/domain is pure code: no I/O.' })),
          patterns: [
            {
              group: ['**/modules', '**/modules/**', '**/http/**', '**/db/**', '**/temporal/**', '**/activities', '**/activities/**', '**/workflows', '**/workflows/**', '../*'],
              message: 'src/domain imports only src/domain and pure libraries.',
            },
          ],
        },
      ],
    },
  },
  {
    // One rating engine: only it (and the periods it builds on) prices a plan item.
    // Templates render within their budget: only the render thread (src/mail/render-worker.js) loads Handlebars.
    files: ['**/*.ts'],
    ignores: ['src/domain/rating.ts', 'src/domain/billing-periods.ts', 'src/domain/pricing.ts', 'test/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: 'handlebars',
              message: 'Templates render in a render thread, within their budget: use the TemplateRenderer of src/mail/templating.ts.',
            },
          ],
          patterns: [
            {
              group: ['**/domain/pricing', './pricing'],
              importNames: ['priceItem'],
              message: 'Plan items are priced by the rating engine (src/domain/rating.ts) alone.',
            },
          ],
        },
      ],
    },
  },
  {
    // Services drive workflows through the typed client (src/temporal/workflows-client.ts), by workflow type
    // name: they import a workflow's contract (workflows/*.types.ts) and ids (workflows/ids.ts), never its code.
    files: ['src/modules/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '/workflows(/index|/shared|/[^/]+\\.workflow)?$',
              allowTypeImports: true,
              message: 'Services start workflows by name through deps.temporal.workflows; import the contract (workflows/*.types.ts) and ids (workflows/ids.ts) instead.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['**/*.js', '**/*.cjs'],
    languageOptions: { sourceType: 'commonjs', globals: { module: 'writable', require: 'readonly', __dirname: 'readonly' } },
    rules: { '@typescript-eslint/no-require-imports': 'off' },
  },
  {
    // Workflow code is replayed deterministically: no I/O, no Node built-ins, no database, and from
    // src/ only the pure domain code (type-only imports are erased and allowed).
    files: ['workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [...nodeBuiltins, 'knex', 'pg', 'pino'].map((name) => ({ name, message: 'Workflows are deterministic: no I/O.' })),
          patterns: [
            {
              group: ['**/src/*', '!**/src/domain', '!**/src/domain/**', '!**/src/modules', '!**/src/modules/**'],
              allowTypeImports: true,
              message: 'Workflows may import values only from src/domain.',
            },
            {
              group: ['**/activities', '**/activities/*'],
              message: 'Workflows call activities through proxyActivities, never directly; their interfaces are declared in the workflows\' contract files (workflows/*.types.ts).',
            },
            {
              group: ['**/src/modules', '**/src/modules/**'],
              message: 'Workflows know activities by their types, never the modules behind them.',
            },
          ],
        },
      ],
    },
  },
);
