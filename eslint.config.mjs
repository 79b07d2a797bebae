import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((name) => `node:${name}`)];

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'coverage/', '.data/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-non-null-assertion': 'off',
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
              group: ['**/src/*', '!**/src/domain', '!**/src/domain/**'],
              allowTypeImports: true,
              message: 'Workflows may import values only from src/domain.',
            },
            {
              group: ['**/activities', '**/activities/*'],
              allowTypeImports: true,
              message: 'Workflows call activities through proxyActivities, never directly.',
            },
          ],
        },
      ],
    },
  },
);
