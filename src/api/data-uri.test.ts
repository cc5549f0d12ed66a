import { mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve, sep } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DATA_URI_PATTERN, parsePvcUri } from './data-uri.ts';

const pattern = new RegExp(DATA_URI_PATTERN);

describe('pvc:// URIs (issue 36: a path stays inside its claim)', () => {
  it('reads plain claims and relative paths', () => {
    expect(parsePvcUri('pvc://data/in/requests.jsonl')).toEqual({ ok: true, claim: 'data', path: 'in/requests.jsonl' });
    expect(parsePvcUri('pvc://data')).toEqual({ ok: true, claim: 'data', path: '' });
    expect(parsePvcUri('pvc://data/results/')).toEqual({ ok: true, claim: 'data', path: 'results' });
    expect(parsePvcUri('pvc://data/.hidden/..x')).toEqual({ ok: true, claim: 'data', path: '.hidden/..x' });
    expect(parsePvcUri('s3://bucket/x').ok).toBe(false);
    expect(parsePvcUri('pvc://Bad_Claim/x').ok).toBe(false);
  });

  it.each([
    ['pvc://data/../../../var/run/secrets/kubernetes.io/serviceaccount/token', /\.\. segment/],
    ['pvc://data/in/../../other/x', /\.\. segment/],
    ['pvc://data/./x', /\. or \.\. segment/],
    ['pvc://data//var/run/secrets/token', /absolute/],
    ['pvc://data/%2e%2e/%2e%2e/etc/passwd', /%/],
    ['pvc://data/%2E%2E%2Fetc', /%/],
    ['pvc://data/..\\..\\etc', /backslash/],
    ['pvc://data/in\0/../x', /control character/],
    ['pvc://data/a//b', /empty segment/],
  ])('refuses %j, in the parser and in the CRD pattern', (uri, why) => {
    const r = parsePvcUri(uri);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.reason).toMatch(why);
    expect(pattern.test(uri)).toBe(false);
  });

  it('the CRD pattern keeps the other schemes, without . or .. segments or backslashes', () => {
    for (const ok of ['s3://tickets/2026-01/', 'hf://Qwen/Qwen2.5-7B-Instruct', 'https://h/p?x=%20', 'oci://r/m:1', 'pvc://data/out/j'])
      expect(pattern.test(ok), ok).toBe(true);
    for (const bad of ['s3://b/../x', 'hf://a/./b', 'https://h/a\\b', 'pvcx://a/..', 'p://a/..', 'pvc://a/..']) expect(pattern.test(bad), bad).toBe(false);
  });

  it('fuzz: every accepted URI resolves inside its claim, and the parser and the CRD pattern agree on pvc://', () => {
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'sits-uri-')));
    const segment = fc.oneof(
      fc.constantFrom('..', '.', '', '%2e%2e', '%2E%2e', '..%2f', '\\..', '\0', 'a', 'in', '.x', '..x', 'x..', '~', ' ', 'ü', '/'),
      fc.string({ maxLength: 6 }),
    );
    fc.assert(
      fc.property(fc.array(segment, { maxLength: 6 }), fc.boolean(), (segs, trailing) => {
        const uri = `pvc://data/${segs.join('/')}${trailing ? '/' : ''}`;
        const r = parsePvcUri(uri);
        expect(pattern.test(uri), uri).toBe(r.ok);
        if (!r.ok) return;
        const claim = join(root, 'ns', r.claim);
        const at = resolve(claim, r.path);
        expect(at === claim || at.startsWith(claim + sep), `${uri} → ${at}`).toBe(true);
        expect(at.startsWith(claim + sep) || r.path === '').toBe(true);
      }),
      { numRuns: 3000 },
    );
  });
});
