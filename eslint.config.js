// ESLint: typescript-eslint's recommended rules, with the few exceptions this code base makes on purpose.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'coverage/', '.tap/', 'node_modules/', 'bench-results/', 'workspaces/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', URL: 'readonly', performance: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', setImmediate: 'readonly', WebAssembly: 'readonly', TextDecoder: 'readonly', URLSearchParams: 'readonly', AbortController: 'readonly', AbortSignal: 'readonly', fetch: 'readonly', Headers: 'readonly', structuredClone: 'readonly' } },
    rules: {
      // `_name` marks a binding kept for its position (destructuring, callbacks).
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
    },
  },
  {
    // Lines up to 120 characters in the source, comments and strings included (Prettier wraps only code).
    files: ['src/**/*.ts'],
    rules: { 'max-len': ['error', { code: 120 }] },
  },
  {
    // Query rows are dynamic records by design (the query language addresses fields by name).
    files: ['src/inventory/**/*.ts', 'src/cli/commands/inventory.ts', 'src/ops/operation.ts', 'src/bench/**/*.ts', 'test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
