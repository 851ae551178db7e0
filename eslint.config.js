import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { importsRule, PURE, PURE_RESTRICTED_GLOBALS } from './eslint/layers.js';

/** The layer rules (table and reasons in eslint/layers.js), as a local plugin. */
const layers = { rules: { imports: importsRule } };

const MATH_RANDOM = { object: 'Math', property: 'random', message: 'Pass a seeded random source instead (src/random.ts).' };
const CLOCK = 'pure layers never read the clock: take `now` as an argument (see eslint/layers.js)';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-restricted-properties': ['error', MATH_RANDOM],
    },
  },
  {
    // Arrows point down between the folders of src/ (tests are harnesses: they may import anything).
    files: ['src/**/*.ts'],
    ignores: ['**/*.test.ts'],
    plugins: { layers },
    rules: { 'layers/imports': 'error' },
  },
  {
    // The pure layers: no clock, no timers, no process, no Math.random (their imports: layers/imports).
    files: PURE.map((f) => `src/${f}/**/*.ts`),
    ignores: ['**/*.test.ts'],
    rules: {
      'no-restricted-properties': [
        'error',
        MATH_RANDOM,
        { object: 'Date', property: 'now', message: CLOCK },
        { object: 'process', property: 'hrtime', message: CLOCK },
      ],
      'no-restricted-syntax': [
        'error',
        { selector: "NewExpression[callee.name='Date'][arguments.length=0]", message: CLOCK },
        { selector: "CallExpression[callee.name='Date']", message: CLOCK },
      ],
      'no-restricted-globals': ['error', ...PURE_RESTRICTED_GLOBALS],
    },
  },
  {
    files: ['bin/**/*.js', 'scripts/**/*.mjs', 'eslint/**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly' } },
  },
);
