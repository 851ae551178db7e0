import { describe, expect, it } from 'vitest';
import { MigpoolError } from '../errors.js';
import { parsePolicies, parsePolicy, policyEntry, policyHelp, POLICIES, POLICY_NAMES, policySyntax, splitPolicyNames, type PolicyEntry } from './registry.js';
import { resolveGpuModel } from '../mig/catalog/index.js';

function message(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(MigpoolError);
    expect((e as MigpoolError).code).toBe('BAD_INPUT');
    const text = (e as Error).message;
    expect(text).not.toContain('\n');
    return text;
  }
  throw new Error('did not throw');
}

describe('the policy registry', () => {
  it('has one entry per keyword, lower case, that a list of policies can name', () => {
    const names = POLICIES.map((e) => e.name);
    expect(new Set(names).size).toBe(names.length);
    for (const n of names) expect(n).toMatch(/^[a-z][a-z0-9-]*$/);
    expect(POLICY_NAMES).toEqual(POLICIES.map(policySyntax));
  });

  describe.each(POLICIES.map((e) => [e.name, e] as const))('%s', (_, entry) => {
    it('parses each of its examples, fresh each time, keeping the name as given', () => {
      for (const example of entry.examples) {
        expect(example.split(':')[0]).toBe(entry.name);
        const a = parsePolicy(example);
        expect(a.name).toBe(example);
        expect(parsePolicy(example)).not.toBe(a);
        const shouted = example.replace(entry.name, entry.name.toUpperCase());
        expect(parsePolicy(` ${shouted} `).name).toBe(shouted);
        expect(parsePolicies(`${example},${POLICIES.find((o) => o !== entry)?.examples[0]}`).map((p) => p.name)[0]).toBe(example);
      }
    });

    it('checks its argument', () => {
      if (!entry.argument) {
        const text = message(() => parsePolicy(`${entry.name}:2`));
        expect(text).toMatch(new RegExp(`^policy '${entry.name}:2': ${entry.name} takes no argument; valid policies: `));
      } else if (entry.argument.required) {
        expect(message(() => parsePolicy(entry.name))).toContain(`${entry.name} needs ${entry.argument.syntax}`);
        expect(message(() => parsePolicy(`${entry.name}:`))).toContain(`e.g. ${entry.examples[0]}`);
      } else {
        expect(parsePolicy(entry.name).name).toBe(entry.name);
        expect(message(() => parsePolicy(`${entry.name}:`))).toContain(`${entry.name} needs ${entry.argument.syntax}`);
      }
    });

    it('is listed in the help, with its argument', () => {
      const line = policyHelp().split('\n').find((l) => l.trimStart().startsWith(`${policySyntax(entry)} `));
      expect(line).toContain(entry.help);
      if (entry.argument) expect(line).toContain(entry.argument.help);
    });
  });

  it('finds entries by keyword, whatever the case', () => {
    expect(policyEntry(' MIGPOOL ')?.name).toBe('migpool');
    expect(policyEntry('fifo')).toBeUndefined();
  });
});

describe('parsePolicy', () => {
  it('knows every policy and keeps the name as given', () => {
    for (const name of ['exclusive', 'timeslice:2', 'mps:4', 'static:7x1g.5gb', 'static:3g.20gb+2g.10gb+1g.5gb+1g.5gb', 'miso', 'migpool', 'Timeslice:3', 'tiresias', 'tiresias:100,200', 'gavel', 'gavel:60']) {
      expect(parsePolicy(name).name).toBe(name);
    }
    expect(parsePolicies('exclusive, timeslice:2').map((p) => p.name)).toEqual(['exclusive', 'timeslice:2']);
    expect(POLICY_NAMES).toContain('static:LAYOUT');
    expect(POLICY_NAMES).toEqual(expect.arrayContaining(['tiresias[:T1,T2,...]', 'gavel[:SECONDS]']));
  });

  it('rejects unknown names and bad arguments on one line, listing the valid ones', () => {
    const valid = `valid policies: ${POLICY_NAMES.join(', ')}`;
    expect(message(() => parsePolicy('fifo'))).toMatch(new RegExp(`^unknown policy 'fifo': ${valid.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(N: jobs per GPU, 1 to 48; LAYOUT: MIG instances of every GPU, e\\.g\\. 7x1g\\.5gb or 3g\\.20gb\\+2g\\.10gb\\+1g\\.5gb\\+1g\\.5gb; `));
    expect(message(() => parsePolicy('fifo'))).toContain('exclusive, timeslice:N, mps:N, static:LAYOUT, miso, migpool');
    expect(message(() => parsePolicy('timeslice'))).toContain('timeslice:2');
    expect(message(() => parsePolicy('mps:0'))).toContain('from 1 to 48');
    expect(message(() => parsePolicy('mps:1.5'))).toContain('from 1 to 48');
    expect(message(() => parsePolicy('mps:49'))).toContain("got '49'");
    expect(message(() => parsePolicy('static:'))).toContain('static needs LAYOUT');
    expect(message(() => parsePolicy('static:7x1g.7gb'))).toContain("no catalogued GPU offers profile '1g.7gb'");
    expect(message(() => parsePolicy('static:7x1g.7gb'))).toContain(valid);
    expect(message(() => parsePolicy('exclusive:2'))).toContain('takes no argument');
  });
});

describe('the MIG slices a policy runs jobs on', () => {
  it('are none for the policies that keep MIG off, the layout for static, any for the MIG policies, under any spelling', () => {
    const a100 = resolveGpuModel('A100-40GB');
    for (const name of ['exclusive', 'timeslice:2', 'mps:3', 'dp', 'deeppool', 'tiresias', 'gavel', 'EXCLUSIVE']) expect(parsePolicy(name).sliceProfiles?.(a100), name).toEqual([]);
    expect([...(parsePolicy('static:3g.20gb+2g.10gb+1g.5gb+1g.5gb').sliceProfiles?.(a100) ?? [])].sort()).toEqual(['1g.5gb', '2g.10gb', '3g.20gb']);
    expect(parsePolicy('Static:7x1g.5gb').sliceProfiles?.(a100)).toEqual(['1g.5gb']);
    for (const name of ['migpool', 'miso']) expect(parsePolicy(name).sliceProfiles, name).toBeUndefined();
  });
});

describe('parsePolicies', () => {
  it('reads a comma-separated list, each policy once', () => {
    expect(parsePolicies(' exclusive ,mps:2,static:7x1g.5gb ').map((p) => p.name)).toEqual(['exclusive', 'mps:2', 'static:7x1g.5gb']);
    expect(message(() => parsePolicies(' , '))).toContain('no policy given');
    expect(message(() => parsePolicies('exclusive,,miso'))).toContain('has an empty name');
    expect(message(() => parsePolicies('exclusive,mps:2,exclusive'))).toBe("'exclusive' is named twice");
    // A piece that names no policy is an unknown policy unless the one before takes a list.
    expect(message(() => parsePolicies('mps:2,3'))).toContain("unknown policy '3'");
    expect(message(() => parsePolicies('static:7x1g.5gb,fifo'))).toContain("unknown policy 'fifo'");
  });

  it('gives the pieces after a list argument to it', () => {
    const listed: PolicyEntry = { name: 'lists', argument: { syntax: 'T1,T2,...', help: 'thresholds', required: false, list: true }, help: 'x', examples: ['lists'], create: () => parsePolicy('exclusive') };
    const entries = [...POLICIES, listed];
    expect(splitPolicyNames('exclusive, lists:1,2 ,3,migpool', entries)).toEqual(['exclusive', 'lists:1,2,3', 'migpool']);
    expect(splitPolicyNames('lists,1', entries)).toEqual(['lists', '1']);
    expect(splitPolicyNames('mps:2,3,lists:4,,5', entries)).toEqual(['mps:2', '3', 'lists:4', '', '5']);
    for (const e of POLICIES.filter((x) => x.argument?.list)) {
      for (const example of e.examples) expect(splitPolicyNames(`exclusive,${example},migpool`)).toEqual(['exclusive', example, 'migpool']);
    }
  });
});
