import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SERVICE_NODE_FLAGS } from '../bench/service.js';
import { BIN } from './run-cli.js';

describe('bin/migpool.js', () => {
  it('starts node with the flags the bench measures the service with, and runs as a command', () => {
    const shebang = readFileSync(BIN, 'utf8').split('\n')[0];
    expect(shebang).toBe(`#!/usr/bin/env -S node ${SERVICE_NODE_FLAGS.join(' ')}`);
    // Run through its first line (env -S), as npx and an installed `migpool` run it.
    expect(execFileSync(BIN, ['--version'], { encoding: 'utf8' }).trim()).toMatch(/^\d+\.\d+\.\d+/);
  });
});
