import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkScenario, loadScenarioText } from './scenario.ts';

const dir = join(import.meta.dirname, '../../scenarios');
const files = readdirSync(dir).filter((f) => f.endsWith('.yaml')).sort();

describe('declarative scenarios', () => {
  it('finds the scenario files', () => {
    expect(files.length).toBeGreaterThanOrEqual(6);
  });
  for (const f of files) {
    it(f, () => {
      const s = loadScenarioText(`scenarios/${f}`, readFileSync(join(dir, f), 'utf8'));
      if (!s.ok) throw s.error;
      const { failures } = checkScenario(s.value);
      expect(failures).toEqual([]);
    });
  }
});

describe('scenario checks can fail', () => {
  it('reports a wrong expected node', () => {
    const s = loadScenarioText(
      'inline.yaml',
      `name: wrong
cluster: {nodes: [{name: n0, shape: t4x4}]}
workload: {pods: [{name: p, gpu: 1}]}
expect:
  - {pod: p, node: n9}
`,
    );
    if (!s.ok) throw s.error;
    expect(checkScenario(s.value).failures).toEqual(['inline.yaml:5: pod p on n0, expected n9']);
  });
  it('names the line of a bad expectation', () => {
    const s = loadScenarioText('inline.yaml', `name: bad\ncluster: {nodes: [{name: n0, shape: t4x4}]}\nworkload: {}\nexpect:\n  - {pod: p, gang: g}\n`);
    expect(s.ok).toBe(false);
    if (!s.ok) expect(s.error.message).toBe('inline.yaml:5:5: expect[0]: give exactly one of gang, pod, pending');
  });
});
