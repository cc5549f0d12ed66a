// The house-size rules of eslint.config.js (issue 35) fire on product code just past their limits, stay quiet at
// the limits, leave tests alone, and the allow-lists name only files that exist.
import { existsSync } from 'node:fs';
import { ESLint } from 'eslint';
import { beforeAll, describe, expect, it } from 'vitest';

const root = new URL('..', import.meta.url);
type Config = { MAX_FUNCTION_LINES: number; LONG_FUNCTION_ALLOWED: string[]; MANY_FIELDS_ALLOWED: string[] };
const { MAX_FUNCTION_LINES, LONG_FUNCTION_ALLOWED, MANY_FIELDS_ALLOWED } = (await import(new URL('eslint.config.js', root).href)) as Config;
const { MAX_CLASS_FIELDS } = (await import(new URL('scripts/eslint-house-rules.mjs', root).href)) as { MAX_CLASS_FIELDS: number };

let eslint: ESLint;
beforeAll(() => {
  eslint = new ESLint({ cwd: root.pathname });
});
/** The house rules' messages of linting `code` as if it were the file at `path`. */
async function lint(path: string, code: string): Promise<string[]> {
  const [r] = await eslint.lintText(code, { filePath: new URL(path, root).pathname });
  return (r?.messages ?? [])
    .filter((m) => m.ruleId === 'max-lines-per-function' || m.ruleId === 'house/max-class-fields')
    .map((m) => `${m.ruleId}: ${m.message}`);
}

/** A function of `lines` lines of code (signature and closing brace included), plus a comment and a blank line that do not count. */
const fn = (lines: number): string => {
  const body = Array.from({ length: lines - 3 }, (_, i) => `  x += ${i};`);
  return `let x = 0;\nexport function long(): number {\n  // a comment\n\n${body.join('\n')}\n  return x;\n}\n`;
};
/** A class with `props` property definitions and `params` constructor parameter properties. */
const cls = (props: number, params: number): string => {
  const fields = Array.from({ length: props }, (_, i) => `  f${i} = ${i};`);
  const ps = Array.from({ length: params }, (_, i) => `readonly p${i}: number`);
  return `export class Wide {\n${fields.join('\n')}\n  constructor(${ps.join(', ')}) {}\n  method(): number {\n    return 1;\n  }\n}\n`;
};

describe('the house-size rules', () => {
  it('are at 150 lines per function and 20 fields per class', () => {
    expect(MAX_FUNCTION_LINES).toBe(150);
    expect(MAX_CLASS_FIELDS).toBe(20);
  });

  it(`report a function of ${MAX_FUNCTION_LINES + 1} lines of code, not one of ${MAX_FUNCTION_LINES} (blank lines and comments skipped)`, async () => {
    expect(await lint('src/core/probe.ts', fn(MAX_FUNCTION_LINES))).toEqual([]);
    expect(await lint('src/core/probe.ts', fn(MAX_FUNCTION_LINES + 1))).toEqual([
      `max-lines-per-function: Function 'long' has too many lines (${MAX_FUNCTION_LINES + 1}). Maximum allowed is ${MAX_FUNCTION_LINES}.`,
    ]);
  });

  it('count an IIFE as a function', async () => {
    const iife = `export const v = (() => {\n${Array.from({ length: MAX_FUNCTION_LINES }, (_, i) => `  const a${i} = ${i};`).join('\n')}\n  return 0;\n})();\n`;
    expect(await lint('src/app/probe.ts', iife)).toHaveLength(1);
  });

  it('report a class of 21 fields, counting property definitions and constructor parameter properties, not one of 20', async () => {
    expect(await lint('src/kube/probe.ts', cls(20, 0))).toEqual([]);
    expect(await lint('src/kube/probe.ts', cls(15, 5))).toEqual([]);
    const wide = [
      "house/max-class-fields: Class 'Wide' has 21 fields (property definitions and constructor parameter properties); at most 20: group the ones that belong together into a small object",
    ];
    expect(await lint('src/kube/probe.ts', cls(21, 0))).toEqual(wide);
    expect(await lint('src/kube/probe.ts', cls(16, 5))).toEqual(wide);
    // Plain constructor parameters are not fields.
    expect(await lint('src/kube/probe.ts', cls(20, 0).replace('constructor()', 'constructor(a: number, b: string)'))).toEqual([]);
  });

  it('cover scripts/ too, but not tests', async () => {
    expect(await lint('scripts/probe.ts', cls(21, 0))).toHaveLength(1);
    expect(await lint('src/kube/probe.test.ts', cls(21, 0) + fn(MAX_FUNCTION_LINES + 1))).toEqual([]);
  });

  it('allow-list only files that exist, each in one list at most once', () => {
    for (const list of [LONG_FUNCTION_ALLOWED, MANY_FIELDS_ALLOWED]) {
      expect(new Set(list).size).toBe(list.length);
      for (const f of list) expect(existsSync(new URL(f, root)), f).toBe(true);
    }
  });
});
