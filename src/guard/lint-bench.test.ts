import { describe, expect, it } from 'vitest';
import { cpuMsSince, scaled } from '../testing/timeouts.ts';
import { benchInputs, runLintBench } from './lint-bench.ts';
import { lintSources } from './lint-files.ts';
import type { Rule } from './rule.ts';
import { RULES } from './rules/index.ts';

/** A test rule that hits every Deployment, so the benchmark places findings (positions cost time). */
const everyDeployment: Rule = {
  id: 'every-deployment',
  severity: 'warning',
  seed: 'test',
  title: 'every Deployment',
  rationale: '',
  kinds: ['Deployment', 'TrainingJob'],
  fixtures: { bad: '', good: '' },
  check: () => [{ message: 'hit', path: ['spec', 'template', 'spec', 'containers', 0, 'env', 0, 'value'] }],
};

describe('benchInputs', () => {
  it('is deterministic per seed and mixes kinds and input styles', () => {
    const a = benchInputs(500, 7);
    expect(benchInputs(500, 7)).toEqual(a);
    expect(benchInputs(500, 8)).not.toEqual(a);
    expect(a.map((s) => s.file.replace(/-\d+/, ''))).toContain('bench/list.json');
    expect(a.some((s) => s.text?.includes('# Source: sits-bench/templates/') === true)).toBe(true);
    const r = lintSources(a, [everyDeployment]);
    expect(r.objects).toBe(500);
    expect(r.findings.filter((f) => f.rule !== 'every-deployment')).toEqual([]);
    const kinds = new Set(r.findings.map((f) => f.kind));
    expect(kinds).toEqual(new Set(['Deployment', 'TrainingJob']));
  });
});

describe('runLintBench', () => {
  it('times parse + lint + format with the injected clock', () => {
    const ticks = [1_000, 3_000];
    const r = runLintBench({ manifests: 500, seed: 1, now: () => ticks.shift() ?? 3_000, rules: [everyDeployment] });
    expect(r).toMatchObject({ manifests: 500, seconds: 2, manifestsPerSec: 250, inputs: 10 });
    expect(r.findings).toBeGreaterThan(50);
  });

  it('lints 2,000 manifests with the registered rules in at most twice the time of the 10,000-in-10-s rate (budget scaled for load)', () => {
    // About 1.5 s of CPU on this machine, timed in CPU time (the unit files may run at a low priority beside the e2e
    // files). The rate itself is what `sits bench webhook` measures (bench/README.md).
    const c0 = process.cpuUsage();
    const r = runLintBench({ manifests: 2_000, seed: 1, rules: [...RULES, everyDeployment], now: () => cpuMsSince(c0) });
    expect(r.seconds * 1000).toBeLessThan(scaled(4_000));
    expect(r.manifestsPerSec).toBeGreaterThan(0);
  });
});
