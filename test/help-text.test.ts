import { describe, expect, it } from 'vitest';
import type { Command } from 'commander';
import { buildProgram } from '../src/cli/main.js';
import { cli } from './run-cli.js';

const all = (cmds: readonly Command[]): Command[] => cmds.flatMap((c) => [c, ...all(c.commands)]);

describe('--help text', () => {
  it("shows no repeatable option's empty list as a default, on any command", () => {
    const program = buildProgram({ out: () => undefined, err: () => undefined });
    for (const cmd of [program, ...all(program.commands)]) expect(cmd.helpInformation(), cmd.name()).not.toContain('(default: [])');
  });

  it('still shows real defaults, and the repeatable options themselves', async () => {
    const { code, out } = await cli('submit', '--help');
    expect(code).toBe(0);
    expect(out).toMatch(/--env <KEY=VALUE> +an environment variable for the job/);
    expect(out).toContain('(default: "0.5")');
  });
});
