import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SITS_IMAGE, SITS_VERSION } from './version.ts';

describe('the release version', () => {
  it('is package.json’s, and names the image', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(SITS_VERSION).toBe(pkg.version);
    expect(SITS_IMAGE.endsWith(`:${pkg.version}`)).toBe(true);
  });
});
