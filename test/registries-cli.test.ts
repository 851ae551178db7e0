import { describe, expect, it } from 'vitest';
import { POLICIES, policySyntax } from '../src/sched/registry.js';
import { TRACE_FORMATS } from '../src/sim/traces/index.js';
import { cli } from './run-cli.js';

describe('the CLI help lists the registries', () => {
  it('simulate --help: every policy with its help, every trace format', async () => {
    const { code, out } = await cli('simulate', '--help');
    expect(code).toBe(0);
    const lines = out.split('\n');
    for (const e of POLICIES) expect(lines.find((l) => l.startsWith(`  ${policySyntax(e)} `))).toContain(e.help);
    for (const f of TRACE_FORMATS) expect(out).toContain(`  ${f.name} `);
  });

  it.each(['serve', 'demo'])('%s --help: every policy', async (command) => {
    const { code, out } = await cli(command, '--help');
    expect(code).toBe(0);
    for (const e of POLICIES) expect(out).toContain(`  ${policySyntax(e)} `);
  });

  it('simulate: a bad policy is one line naming the flag and the valid policies, exit 2', async () => {
    const { code, err } = await cli('simulate', '--trace', 'synthetic', '--fleet', '1xA100-40GB', '--policies', 'exclusive,mps:0');
    expect(code).toBe(2);
    expect(err.trim().split('\n')).toHaveLength(1);
    expect(err).toMatch(/^migpool: --policies: policy 'mps:0': mps needs a number of jobs per GPU from 1 to 48 .*valid policies: exclusive, /);
  });
});
