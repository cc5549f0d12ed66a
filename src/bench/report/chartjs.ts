/** The Chart.js browser bundle from node_modules, read once, ready to inline into an offline HTML file. */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

let cached: string | undefined;

export function chartJsSource(): string {
  if (cached === undefined) {
    const main = createRequire(import.meta.url).resolve('chart.js');
    const src = readFileSync(join(dirname(main), 'chart.umd.min.js'), 'utf8');
    cached = src.replace(/<\/script/gi, '<\\/script');
  }
  return cached;
}

/** JSON that is safe inside a <script> element. */
export function scriptJson(value: unknown): string {
  return JSON.stringify(value).replace(/</g, '\\u003c').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029');
}

export function escapeHtml(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}
