// Flat config (eslint 9). Not type-aware: a full program type-check is what `npm run typecheck` is for, and
// the untyped rules run in a few seconds on a small machine.
import js from '@eslint/js'
import globals from 'globals'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  {ignores: ['dist/', 'node_modules/', 'coverage/', 'test/fixtures/', 'test/py/', 'runtime-hooks/']},
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {languageOptions: {globals: {...globals.node}}},
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', {argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none'}],
      // `typeof import('...')` types go with lazily imported modules, so they stay allowed
      '@typescript-eslint/consistent-type-imports': ['error', {fixStyle: 'inline-type-imports', disallowTypeAnnotations: false}],
    },
  },
  {
    files: ['test/**/*.ts'],
    languageOptions: {globals: {...globals.jest}},
    // tests read parsed JSON of the built CLI: any is the honest type there
    rules: {'@typescript-eslint/no-explicit-any': 'off', '@typescript-eslint/no-non-null-assertion': 'off'},
  },
)
