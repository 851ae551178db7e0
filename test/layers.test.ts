import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const run = promisify(execFile);

/** The messages of the layer rules (eslint.config.js, eslint/layers.js) for `code` as the file `path` of this repository. */
const eslint = new ESLint({ cwd: ROOT });
async function lint(path: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: join(ROOT, path) });
  return (result?.messages ?? []).map((m) => `${m.ruleId}: ${m.message}`);
}

describe('layer rules (lint)', () => {
  it('flag imports up the layers, saying where code belongs', async () => {
    expect(await lint('src/sched/x.ts', "import { PoolServiceImpl } from '../control/service.js';\nexport const a = PoolServiceImpl;\n")).toEqual([
      'layers/imports: src/sched must not import src/control: policies are pure, and control/ is above it (time over decisions); move what both need beneath both, or pass it in',
    ]);
    expect((await lint('src/store/x.ts', "import type { JobRecord } from '../control/service.js';\nexport type A = JobRecord;\n"))[0]).toContain('src/store must not import src/control');
    expect((await lint('src/mig/catalog/x.ts', "import { simulate } from '../../sim/engine.js';\nexport const a = simulate;\n"))[0]).toContain('src/mig must not import src/sim');
  });

  it('flag sideways imports not listed, and pass the listed ones', async () => {
    expect((await lint('src/sim/x.ts', "import { a } from '../control/apply.js';\nexport const b = a;\n"))[0]).toContain('both are time');
    expect(await lint('src/cli/x.ts', "import { a } from '../server/app.js';\nexport const b = a;\n")).toEqual([]);
    expect(await lint('src/burst/x.ts', "import type { ScalingModel } from '../sched/types.js';\nexport type A = ScalingModel;\n")).toEqual([]);
  });

  it('keep the pure layers off adapters, I/O modules, the clock and the process', async () => {
    expect((await lint('src/sched/x.ts', "import { openStore } from '../store/open.js';\nexport const a = openStore;\n"))[0]).toContain('do no I/O');
    expect((await lint('src/sim/traces/x.ts', "import { readFileSync } from 'node:fs';\nexport const a = readFileSync;\n"))[0]).toContain("src/sim must not import 'node:fs'");
    expect(await lint('src/sim/x.ts', "import type { Stats } from 'node:fs';\nexport type A = Stats;\n")).toEqual([]);
    expect(await lint('src/perf/x.ts', 'export const t = Date.now();\n')).toEqual([expect.stringContaining('never read the clock')]);
    expect(await lint('src/optimize/x.ts', 'export const t = new Date();\n')).toEqual([expect.stringContaining('never read the clock')]);
    expect(await lint('src/partition/x.ts', 'export const d = new Date(0).getTime();\n')).toEqual([]);
    expect(await lint('src/burst/x.ts', 'export const e = process.env.HOME;\n')).toEqual([expect.stringContaining('no-restricted-globals')]);
    expect(await lint('src/sched/x.ts', 'export const r = Math.random();\n')).toEqual([expect.stringContaining('seeded random source')]);
    // The service side may do all of it.
    expect(await lint('src/control/x.ts', "import { openStore } from '../store/open.js';\nimport { readFileSync } from 'node:fs';\nexport const a = [openStore, readFileSync, Date.now()];\n")).toEqual([]);
  });

  it('keep base beneath everything, name a folder in no layer, and let tests import anything', async () => {
    expect((await lint('src/errors.ts', "import { a } from './mig/types.js';\nexport const b = a;\n"))[0]).toContain('src/errors.ts is base');
    expect((await lint('src/newthing/x.ts', 'export const a = 1;\n'))[0]).toContain('src/newthing is in no layer: add it to the table in eslint/layers.js');
    expect(await lint('src/sched/x.test.ts', "import { simulate } from '../sim/engine.js';\nexport const a = simulate;\n")).toEqual([]);
  });
});

describe('cycle check (scripts/check-cycles.mjs)', () => {
  const script = join(ROOT, 'scripts', 'check-cycles.mjs');

  it('passes a tree without cycles and lists each cycle of one with one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'migpool-cycles-'));
    mkdirSync(join(dir, 'a'));
    writeFileSync(join(dir, 'a', 'one.ts'), "import { two } from './two.js';\nexport const one = two;\n");
    writeFileSync(join(dir, 'a', 'two.ts'), "export const two = 2;\n");
    writeFileSync(join(dir, 'leaf.ts'), "export type { one } from './a/one.js';\n");
    expect((await run('node', [script, dir])).stdout).toContain('no import cycle among 3 modules');

    writeFileSync(join(dir, 'a', 'two.ts'), "import type { X } from '../three.js';\nexport const two = 2;\nexport type Y = X;\n");
    writeFileSync(join(dir, 'three.ts'), "import { one } from './a/one.js';\nexport type X = typeof one;\n");
    writeFileSync(join(dir, 'self.ts'), "export * from './self.js';\n");
    const failed = await run('node', [script, dir]).then(
      () => null,
      (e: { code: number; stderr: string }) => e,
    );
    expect(failed?.code).toBe(1);
    const lines = failed?.stderr.trim().split('\n') ?? [];
    expect(lines.filter((l) => l.startsWith('import cycle: '))).toHaveLength(2);
    expect(lines.find((l) => l.includes('one.ts'))).toMatch(/a\/one\.ts -> .*a\/two\.ts -> .*three\.ts -> .*a\/one\.ts$/);
    expect(lines.find((l) => l.includes('self.ts'))).toMatch(/self\.ts -> .*self\.ts$/);
  });
});
