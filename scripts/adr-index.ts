// The ADR index (docs/adr/README.md): read what each ADR says about itself in its header lines, and render the
// table. Pure but for readAdrs; gen-adr-index.ts writes the file, adr-index.test.ts checks it.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export const ADR_FILE = /^(\d{4})-[a-z0-9-]+\.md$/;

/** Header keys an ADR may carry between its Status line and its first section. Each relation names ADRs by link. */
export const RELATION_KEYS = ['Amends', 'Amended by', 'Supersedes', 'Superseded by'] as const;
export type RelationKey = (typeof RELATION_KEYS)[number];

/** The key the other ADR must carry for each relation, so that every link is there in both directions. */
export const INVERSE: Readonly<Record<RelationKey, RelationKey>> = {
  Amends: 'Amended by',
  'Amended by': 'Amends',
  Supersedes: 'Superseded by',
  'Superseded by': 'Supersedes',
};

export interface Adr {
  readonly number: number;
  readonly file: string;
  readonly title: string;
  /** The first words of the Status line: accepted, proposed, accepted in part. */
  readonly status: string;
  /** The Summary line: what the ADR decides, in one sentence. */
  readonly summary: string;
  readonly relations: Readonly<Record<RelationKey, readonly number[]>>;
  /** Links in the relation lines, as written, so that a check can see they point at real files. */
  readonly links: readonly { readonly number: number; readonly file: string }[];
  /** The ADR amends itself in place ("## Amendment" sections, "(amended 2026-…)"). */
  readonly amendedInPlace: boolean;
}

const pad = (n: number): string => String(n).padStart(4, '0');

/** Parse one ADR; every problem is an error naming the file and the line it expected. */
export function parseAdr(file: string, text: string): Adr {
  const m = ADR_FILE.exec(file);
  if (!m) throw new Error(`${file}: an ADR file is named NNNN-kebab-case-title.md`);
  const number = Number(m[1]);
  const lines = text.split('\n');
  const h1 = /^#\s+(\d{4})\s*(?:—|–|-|:|\.)\s*(.+?)\s*$/.exec(lines[0] ?? '');
  if (!h1) throw new Error(`${file}: line 1 must be the title, "# ${m[1]} — What it decides"`);
  if (Number(h1[1]) !== number) throw new Error(`${file}: the title says ADR ${h1[1]}, the file name ${m[1]}`);
  // The header: everything before the first section heading.
  const end = lines.findIndex((l, i) => i > 0 && /^##\s/.test(l));
  const header = lines.slice(1, end < 0 ? lines.length : end);
  const statusLine = header.find((l) => l.startsWith('Status:'));
  if (statusLine === undefined) throw new Error(`${file}: no "Status:" line before the first section`);
  const status = /^Status:\s*([A-Za-z][A-Za-z ]*?)\s*(?:[(.;,]|$)/.exec(statusLine)?.[1]?.toLowerCase();
  if (!status) throw new Error(`${file}: the Status line must start with a word (accepted, proposed, …)`);
  const summaryLine = header.find((l) => l.startsWith('Summary:'));
  const summary = summaryLine?.slice('Summary:'.length).trim() ?? '';
  if (summary === '') throw new Error(`${file}: no "Summary:" line (one sentence: what this ADR decides) before the first section`);
  const relations = { Amends: [], 'Amended by': [], Supersedes: [], 'Superseded by': [] } as Record<RelationKey, number[]>;
  const links: { number: number; file: string }[] = [];
  for (const line of header) {
    const key = RELATION_KEYS.find((k) => line.startsWith(`${k}:`));
    if (key === undefined) continue;
    const found = [...line.matchAll(/\[(\d{4})\]\(([^)\s]+)\)/g)];
    if (found.length === 0) throw new Error(`${file}: "${key}:" names no ADR as a link [NNNN](NNNN-….md)`);
    for (const f of found) {
      relations[key].push(Number(f[1]));
      links.push({ number: Number(f[1]), file: f[2]! });
    }
  }
  const amendedInPlace = /^## Amendment\b|\bamended (?:the same day|\d{4}-\d{2}-\d{2})|\bAmended \(\d{4}-\d{2}-\d{2}\)/m.test(text);
  return { number, file, title: h1[2]!, status, summary, relations, links, amendedInPlace };
}

export function readAdrs(dir: string): Adr[] {
  return readdirSync(dir)
    .filter((f) => ADR_FILE.test(f))
    .sort()
    .map((f) => parseAdr(f, readFileSync(join(dir, f), 'utf8')));
}

/** What is wrong with the ADRs as a set: duplicate numbers, links to no file, relations without their inverse. */
export function adrProblems(adrs: readonly Adr[]): string[] {
  const problems: string[] = [];
  const byNumber = new Map<number, Adr>();
  for (const a of adrs) {
    const seen = byNumber.get(a.number);
    if (seen) problems.push(`${a.file} and ${seen.file} both have number ${pad(a.number)}`);
    byNumber.set(a.number, a);
  }
  for (const a of adrs) {
    for (const l of a.links) {
      const target = byNumber.get(l.number);
      if (!target) problems.push(`${a.file}: links ADR ${pad(l.number)}, which does not exist`);
      else if (target.file !== l.file) problems.push(`${a.file}: the link to ${pad(l.number)} points at ${l.file}, the file is ${target.file}`);
    }
    for (const key of RELATION_KEYS) {
      for (const n of a.relations[key]) {
        if (n === a.number) problems.push(`${a.file}: "${key}:" names the ADR itself`);
        const other = byNumber.get(n);
        if (other && !other.relations[INVERSE[key]].includes(a.number)) {
          problems.push(`${a.file} says "${key}: ${pad(n)}", but ${other.file} has no "${INVERSE[key]}: [${pad(a.number)}](${a.file})"`);
        }
      }
    }
  }
  return problems;
}

const link = (a: Adr): string => `[${pad(a.number)}](${a.file})`;
const cell = (s: string): string => s.replace(/\|/g, '\\|');

function statusCell(a: Adr, byNumber: ReadonlyMap<number, Adr>): string {
  const refs = (ns: readonly number[]): string =>
    ns
      .map((n) => {
        const o = byNumber.get(n);
        return o ? link(o) : pad(n);
      })
      .join(', ');
  const parts = [a.status.charAt(0).toUpperCase() + a.status.slice(1)];
  if (a.relations['Superseded by'].length > 0) parts.push(`superseded by ${refs(a.relations['Superseded by'])}`);
  if (a.relations['Amended by'].length > 0) parts.push(`amended by ${refs(a.relations['Amended by'])}`);
  if (a.amendedInPlace) parts.push('amended in place');
  if (a.relations.Supersedes.length > 0) parts.push(`supersedes ${refs(a.relations.Supersedes)}`);
  if (a.relations.Amends.length > 0) parts.push(`amends ${refs(a.relations.Amends)}`);
  return parts.join('; ');
}

/** The numbers between the first and the last ADR that no file has. */
export function gaps(adrs: readonly Adr[]): number[] {
  const have = new Set(adrs.map((a) => a.number));
  const max = Math.max(0, ...have);
  const out: number[] = [];
  for (let n = 1; n <= max; n++) if (!have.has(n)) out.push(n);
  return out;
}

export function renderAdrIndex(adrs: readonly Adr[]): string {
  const byNumber = new Map(adrs.map((a) => [a.number, a] as const));
  const max = Math.max(0, ...byNumber.keys());
  const missing = gaps(adrs);
  const rows: string[] = [];
  for (let n = 1; n <= max; n++) {
    const a = byNumber.get(n);
    // Runs of unused numbers are one row each, so a number cited from code is always findable.
    if (!a) rows.push(`| ${pad(n)} | *not used* | | |`);
    else rows.push(`| ${link(a)} | ${cell(a.title)} | ${cell(statusCell(a, byNumber))} | ${cell(a.summary)} |`);
  }
  return [
    '# Architecture decision records',
    '',
    "<!-- Generated by `npm run gen:adr-index` (scripts/gen-adr-index.ts) from each ADR's title, Status, Summary,",
    '     Amends / Amended by / Supersedes / Superseded by lines. Do not edit by hand. -->',
    '',
    `${adrs.length} ADRs, numbered 0001–${pad(max)}; ${missing.length} numbers in between are not used. Code and docs cite`,
    'ADRs by number ("ADR 0104"), so a file is never renumbered and an unused number is never filled: **a new ADR',
    `takes the next number after the highest** (now ${pad(max + 1)}, unless another open piece of work already holds it).`,
    '',
    'A new ADR is `NNNN-what-it-decides.md`, starting with:',
    '',
    '```',
    '# NNNN — What it decides',
    '',
    'Status: proposed (YYYY-MM-DD)',
    '',
    'Amends: [MMMM](MMMM-….md) (what it changes). ← only if it changes an earlier ADR, which then gets "Amended by: [NNNN](…)"',
    '',
    'Summary: One sentence: what is decided.',
    '```',
    '',
    'then Context, Decision, Consequences. Long measurement tables (per-seed runs, parameter sweeps) go to',
    '`bench/notes/adr-NNNN-*.md`, linked from the ADR, which keeps the conclusion. Then run `npm run gen:adr-index`;',
    '`scripts/adr-index.test.ts` fails while this file is out of date or a relation lacks its inverse.',
    '',
    'Status: *Accepted* or *Proposed* (the lead confirms at merge) as each ADR says; *amended by* names the later',
    'ADRs that change part of it (read them together), *amended in place* means it has its own dated amendment.',
    '',
    '| ADR | Title | Status | Decides |',
    '|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}
