import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { renderRulesDoc } from '../src/guard/rules-doc.ts';
import { RULES } from '../src/guard/rules/index.ts';

const DOC = resolve(dirname(fileURLToPath(import.meta.url)), '../docs/rules.md');

describe('docs/rules.md', () => {
  it('is what the generator writes from the rules (run `npm run gen:rules` after changing a rule)', () => {
    expect(readFileSync(DOC, 'utf8')).toBe(renderRulesDoc(RULES));
  });

  it('lists every rule with its severity, seed and how to disable it', () => {
    const doc = renderRulesDoc(RULES);
    for (const r of RULES) {
      expect(doc).toContain(`| [\`${r.id}\`](#${r.id}) | ${r.severity} | ${r.seed} |`);
      expect(doc).toContain(`### ${r.id}\n`);
      expect(doc).toContain(`lint.sits2026.dev/disable: "${r.id}"`);
    }
  });
});
