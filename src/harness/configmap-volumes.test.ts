// The fake kubelet's configMap volumes (dev mode): the kubelet's projection rules and its atomic writer's layout.
import { lstatSync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { overlayPaths, projectConfigMap, writeVolume } from './configmap-volumes.ts';

const cm = { metadata: { name: 'cfg' }, data: { 'a.txt': 'hello' }, binaryData: { 'm.wasm': Buffer.from([0, 0x61, 0x73, 0x6d, 0xff]).toString('base64') } };
const text = (b: Uint8Array): string => new TextDecoder().decode(b);

describe('projectConfigMap', () => {
  it('projects every key of data and binaryData, with the default mode 0644', () => {
    const p = projectConfigMap({ name: 'cfg' }, cm);
    expect(p.ok && p.files.map((f) => [f.path, f.mode])).toEqual([
      ['a.txt', 0o644],
      ['m.wasm', 0o644],
    ]);
    expect(p.ok && [...(p.files[1]?.bytes ?? [])]).toEqual([0, 0x61, 0x73, 0x6d, 0xff]);
  });
  it('projects only the listed items, at their paths and modes', () => {
    const p = projectConfigMap(
      {
        name: 'cfg',
        defaultMode: 0o400,
        items: [
          { key: 'a.txt', path: 'conf/a', mode: 0o600 },
          { key: 'm.wasm', path: 'm' },
        ],
      },
      cm,
    );
    expect(p.ok && p.files.map((f) => [f.path, f.mode, f.bytes.length])).toEqual([
      ['conf/a', 0o600, 5],
      ['m', 0o400, 5],
    ]);
    expect(p.ok && text(p.files[0]?.bytes ?? new Uint8Array())).toBe('hello');
  });
  it("fails the mount with the kubelet's messages unless the volume is optional", () => {
    expect(projectConfigMap({ name: 'gone' }, undefined)).toEqual({ ok: false, reason: 'configmap "gone" not found' });
    expect(projectConfigMap({ name: 'gone', optional: true }, undefined)).toEqual({ ok: true, files: [] });
    const items = [
      { key: 'nope', path: 'x' },
      { key: 'a.txt', path: 'a' },
    ];
    expect(projectConfigMap({ name: 'cfg', items }, cm)).toEqual({ ok: false, reason: 'configmap references non-existent config key: nope' });
    const opt = projectConfigMap({ name: 'cfg', items, optional: true }, cm);
    expect(opt.ok && opt.files.map((f) => f.path)).toEqual(['a']);
  });
});

describe('writeVolume', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sits-cm-volume-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  it('lays files out as the atomic writer: a timestamped folder, ..data linking to it, top-level entries through ..data', () => {
    const vol = join(dir, 'v');
    writeVolume(
      vol,
      [
        { path: 'conf/a', bytes: new TextEncoder().encode('hello'), mode: 0o600 },
        { path: 'm', bytes: new Uint8Array([1, 2]), mode: 0o644 },
      ],
      new Date('2026-12-02T03:04:05.678Z'),
    );
    expect(readlinkSync(join(vol, '..data'))).toBe('..2026_12_02_03_04_05.678');
    expect(lstatSync(join(vol, 'conf')).isSymbolicLink()).toBe(true);
    expect(readlinkSync(join(vol, 'm'))).toBe(join('..data', 'm'));
    expect(readFileSync(join(vol, 'conf', 'a'), 'utf8')).toBe('hello');
    expect(statSync(join(vol, 'conf', 'a')).mode & 0o777).toBe(0o600);
    expect([...readFileSync(join(vol, 'm'))]).toEqual([1, 2]);
    // Written again (a restarted pod): the old content goes.
    writeVolume(vol, [{ path: 'n', bytes: new Uint8Array([3]), mode: 0o644 }], new Date('2026-12-02T03:04:06Z'));
    expect(() => statSync(join(vol, 'm'))).toThrow();
    expect([...readFileSync(join(vol, 'n'))]).toEqual([3]);
  });
});

describe('overlayPaths', () => {
  it('puts the longest container path first, so a mount inside a mapped folder wins', () => {
    const m = overlayPaths({ '/mnt': '/host/mnt', '/mnt/batch': '/host/batch' }, { '/mnt/batch/plugins': '/kubelet/v' });
    expect(Object.keys(m)).toEqual(['/mnt/batch/plugins', '/mnt/batch', '/mnt']);
  });
});
