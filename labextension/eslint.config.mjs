// ESLint as JupyterLab's extension template configures it (typescript-eslint's recommended rules,
// the Jupyter plugin's), without its Prettier rules: formatting is left as it is.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';
import globals from 'globals';
import jupyterPlugin from '@jupyter/eslint-plugin';

export default defineConfig([
  {
    ignores: ['node_modules', 'dist', 'lib', 'coverage', '**/*.js', '**/*.d.ts', '**/__tests__', 'ui-tests']
  },
  js.configs.recommended,
  tseslint.configs.recommended,
  { plugins: { jupyter: jupyterPlugin } },
  jupyterPlugin.configs.recommended,
  {
    files: ['*.mjs'],
    languageOptions: { globals: globals.node }
  },
  {
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: {
      globals: { ...globals.browser, ...globals.es2015 },
      parserOptions: { project: 'tsconfig.json', sourceType: 'module' }
    },
    rules: {
      '@typescript-eslint/naming-convention': [
        'error',
        { selector: 'interface', format: ['PascalCase'], custom: { regex: '^I[A-Z]', match: true } }
      ],
      '@typescript-eslint/no-unused-vars': ['warn', { args: 'none' }],
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-namespace': 'off',
      '@typescript-eslint/no-use-before-define': 'off',
      curly: ['error', 'all'],
      eqeqeq: 'error',
      'prefer-arrow-callback': 'error'
    }
  }
]);
