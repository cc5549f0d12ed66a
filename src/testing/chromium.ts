// Headless Chromium for browser tests: Debian's package driven by playwright-core (no browser download
// is possible here). `npm test` provides the path through SITS_CHROMIUM (tools/chromium/ensure.mjs).
import { existsSync } from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';

// Without the background-networking flags Chromium keeps dialling Google's hosts on a closed network.
const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export function chromiumPath(): string {
  const path = process.env.SITS_CHROMIUM ?? '/usr/bin/chromium';
  if (!existsSync(path)) throw new Error(`no Chromium at ${path}: run \`node tools/chromium/ensure.mjs\` (npm test does) or set SITS_CHROMIUM`);
  return path;
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath(), headless: true, args: FLAGS });
}

/** Collects uncaught page errors and console errors: a page that throws is a failed page. */
export function pageErrors(page: Page): string[] {
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  return errors;
}
