import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ADR_FILE, adrProblems, gaps, parseAdr, readAdrs, renderAdrIndex, type Adr } from './adr-index.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const ADR_DIR = join(ROOT, 'docs/adr');
const INDEX = join(ADR_DIR, 'README.md');

const adr = (number: number, header: string, title = `Decision ${number}`): string =>
  [`# ${String(number).padStart(4, '0')} — ${title}`, '', 'Status: accepted (2026-12-06)', '', header, '', '## Context', 'x', ''].join('\n');

describe('docs/adr/README.md', () => {
  const adrs = readAdrs(ADR_DIR);

  it('is what the generator writes from the ADRs (run `npm run gen:adr-index` after adding or renaming an ADR)', () => {
    expect(readFileSync(INDEX, 'utf8')).toBe(renderAdrIndex(adrs));
  });

  it('lists every ADR file with its title and summary, and every unused number', () => {
    const index = readFileSync(INDEX, 'utf8');
    const files = readdirSync(ADR_DIR).filter((f) => ADR_FILE.test(f));
    expect(files.length).toBe(adrs.length);
    for (const a of adrs) expect(index).toContain(`| [${a.file.slice(0, 4)}](${a.file}) | ${a.title.replace(/\|/g, '\\|')} |`);
    for (const n of gaps(adrs)) expect(index).toContain(`| ${String(n).padStart(4, '0')} | *not used* |`);
  });

  it('has every Amends / Supersedes link in both directions, to files that exist', () => {
    expect(adrProblems(adrs)).toEqual([]);
  });

  it('links every bench note from an ADR, and every bench note an ADR links exists', () => {
    const notesDir = join(ROOT, 'bench/notes');
    const notes = readdirSync(notesDir).filter((f) => /^adr-\d{4}-.+\.md$/.test(f));
    const texts = adrs.map((a) => readFileSync(join(ADR_DIR, a.file), 'utf8')).join('\n');
    for (const n of notes) expect(texts, `bench/notes/${n} is linked from its ADR`).toContain(`../../bench/notes/${n}`);
    for (const m of texts.matchAll(/\.\.\/\.\.\/bench\/notes\/([^)#\s]+)/g)) expect(notes).toContain(m[1]);
  });
});

describe('the ADR index generator', () => {
  const one = parseAdr('0001-a.md', adr(1, 'Summary: Does a.'));
  const three = parseAdr('0003-c.md', adr(3, 'Summary: Does c.'));

  it('changes its output when an ADR is added or a title changes, so the committed index goes stale', () => {
    const base = renderAdrIndex([one, three]);
    expect(renderAdrIndex([one, three, parseAdr('0004-d.md', adr(4, 'Summary: Does d.'))])).not.toBe(base);
    expect(renderAdrIndex([one, parseAdr('0003-c.md', adr(3, 'Summary: Does c.', 'Another title'))])).not.toBe(base);
    expect(base).toContain('| 0002 | *not used* | | |');
    expect(base).toContain('(now 0004,');
  });

  it('reports a relation whose inverse is missing, and a link to no file', () => {
    const amends = parseAdr('0003-c.md', adr(3, 'Amends: [0001](0001-a.md) (its scale).\n\nSummary: Does c.'));
    expect(adrProblems([one, amends])).toEqual(['0003-c.md says "Amends: 0001", but 0001-a.md has no "Amended by: [0003](0003-c.md)"']);
    const amended = parseAdr('0001-a.md', adr(1, 'Amended by: [0003](0003-c.md).\n\nSummary: Does a.'));
    expect(adrProblems([amended, amends])).toEqual([]);
    const wrong = parseAdr('0003-c.md', adr(3, 'Supersedes: [0002](0002-b.md).\n\nSummary: Does c.'));
    expect(adrProblems([one, wrong])).toEqual(['0003-c.md: links ADR 0002, which does not exist']);
    const status = renderAdrIndex([amended, amends]);
    expect(status).toContain('| Accepted; amended by [0003](0003-c.md) |');
    expect(status).toContain('| Accepted; amends [0001](0001-a.md) |');
  });

  it('refuses an ADR without a Summary line, or whose title number is not its file number, naming the file', () => {
    expect(() => parseAdr('0005-e.md', adr(5, ''))).toThrow('0005-e.md: no "Summary:" line');
    expect(() => parseAdr('0005-e.md', adr(6, 'Summary: x.'))).toThrow('0005-e.md: the title says ADR 0006, the file name 0005');
    expect(() => parseAdr('5-e.md', adr(5, 'Summary: x.'))).toThrow('5-e.md: an ADR file is named NNNN-kebab-case-title.md');
  });

  it('reads the status word and in-place amendments', () => {
    const text =
      adr(7, 'Summary: x.').replace('Status: accepted (2026-12-06)', 'Status: accepted in part (2026-12-02). Uses ADR 0001.') +
      '\n## Amendment (2026-12-03): y\n';
    const g: Adr = parseAdr('0007-g.md', text);
    expect(g.status).toBe('accepted in part');
    expect(g.amendedInPlace).toBe(true);
  });
});
