// kubectl's habits on the commands that print objects or read a cluster (issue 31): every default table fits 120
// columns on the demo data (-o wide has the rest), -o json|yaml everywhere, -n and --context as kubectl reads them,
// and `sits top --watch` redrawing until Ctrl-C, through the real CLI.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { PROFILES } from '../core/plugins/registry.ts';
import { NODE_SHAPES } from '../core/model/presets.ts';
import { sitsInPty } from '../testing/pty.ts';
import { olderNode } from '../testing/older-node.ts';
import { runSits } from '../testing/sits-cli.ts';
import { renderPresets, renderProfiles } from './commands/info.ts';
import { renderBatch } from './commands/schedule.ts';
import { namespacedName } from './kube-flags.ts';
import { etaCell, renderTop } from './top-render.ts';
import { simView } from './top-source.ts';
import { checkScenario, loadScenarioText } from '../app/scenario.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const OLD_NODE = olderNode();
const widest = (text: string): number => Math.max(...text.split('\n').map((l) => [...l].length));

describe('tables fit 120 columns', () => {
  it('profiles and presets: within 120, -o wide has the scorers and whole descriptions', () => {
    expect(widest(renderProfiles('table'))).toBeLessThanOrEqual(120);
    expect(widest(renderPresets('table'))).toBeLessThanOrEqual(120);
    const wide = renderProfiles('wide');
    expect(wide).toContain('sits-frag×1+node-affinity×2');
    for (const p of Object.values(PROFILES)) expect(wide).toContain(p.description);
    for (const s of Object.values(NODE_SHAPES)) expect(renderPresets('wide')).toContain(s.description);
    // The default cut the long descriptions (else the width test above proves nothing).
    expect(renderProfiles('table')).toContain('…');
  });

  it("top on the demo cluster, every section, and schedule on a scenario's cluster", () => {
    const v = simView({ seed: 1, hours: 8, load: 1, atMinutes: 120 });
    for (const section of ['all', 'nodes', 'queues', 'pending', 'jobs'] as const)
      expect(widest(renderTop(v, { colorLevel: 0, width: 120, section, nowMs: v.atMs })), section).toBeLessThanOrEqual(120);
    const file = 'scenarios/gang-16-one-rack.yaml';
    const s = loadScenarioText(file, readFileSync(join(ROOT, file), 'utf8'));
    if (!s.ok) throw s.error;
    const r = checkScenario(s.value).result;
    if (r === undefined) throw new Error('no placements');
    const table = renderBatch(r).split('\n\npending:')[0] ?? '';
    expect(widest(table)).toBeLessThanOrEqual(120);
    expect(renderBatch(r, true)).toMatch(/^pod\s+gang\s+node\s+rack\s+gpus$/m);
  });

  it('an ETA a minute or more past is overdue, not "now"', () => {
    expect(etaCell(undefined, 0)).toBe('-');
    expect(etaCell(120_000, 0)).toBe('2m');
    expect(etaCell(0, 30_000)).toBe('now');
    expect(etaCell(0, 12 * 60_000)).toBe('overdue 12m');
  });
});

describe('-o json|yaml, -n and --context', () => {
  it('profiles and presets print json and yaml; an unknown format is one line', async () => {
    const j = await runSits(['profiles', '-o', 'json']);
    expect(j.code, j.err).toBe(0);
    expect((JSON.parse(j.out) as { name: string }[]).map((p) => p.name)).toEqual(Object.keys(PROFILES));
    const y = await runSits(['presets', '-o', 'yaml']);
    expect(y.code, y.err).toBe(0);
    expect((parse(y.out) as { id: string }[]).map((s) => s.id)).toEqual(Object.keys(NODE_SHAPES));
    const bad = await runSits(['profiles', '-o', 'xml']);
    expect(bad.code).toBe(2);
    expect(bad.err).toBe('sits: profiles --output: "xml" is not one of table, wide, json, yaml (see sits profiles --help)\n');
  });

  it('top -o yaml is the view', async () => {
    const r = await runSits(['top', '--sim', '-o', 'yaml']);
    expect(r.code, r.err).toBe(0);
    expect(parse(r.out)).toMatchObject({ version: 1, source: 'sim' });
  });

  it('scenario -o json: per file, ok and failures', async () => {
    const r = await runSits(['scenario', 'scenarios/gang-16-one-rack.yaml', '-o', 'json']);
    expect(r.code, r.err).toBe(0);
    expect(JSON.parse(r.out)).toMatchObject([{ file: 'scenarios/gang-16-one-rack.yaml', name: 'gang-16-one-rack', ok: true, failures: [] }]);
  });

  it('NAME -n NS and NS/NAME name the same pod; the namespace otherwise comes from the context', () => {
    expect(namespacedName('w', 'eta', () => 'default')).toBe('eta/w');
    expect(namespacedName('eta/w', undefined, () => 'default')).toBe('eta/w');
    expect(namespacedName('w', undefined, () => 'team-a')).toBe('team-a/w');
    expect(() => namespacedName('eta/w', 'other', () => 'default')).toThrow(/names namespace eta but -n says other/);
    expect(() => namespacedName('a/b/c', undefined, () => 'default')).toThrow(/must be NAME or namespace\/name/);
  });

  it('--context picks another context (its server), an unknown one names the known ones', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sits-ctx-'));
    const kc = join(dir, 'config');
    writeFileSync(
      kc,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        '- name: c1',
        '  cluster: { server: "https://127.0.0.1:1" }',
        '- name: c2',
        '  cluster: { server: "https://127.0.0.1:2" }',
        'users:',
        '- name: u',
        '  user: { token: x }',
        'contexts:',
        '- name: one',
        '  context: { cluster: c1, user: u, namespace: team-a }',
        '- name: two',
        '  context: { cluster: c2, user: u }',
        'current-context: one',
        '',
      ].join('\n'),
    );
    const unknown = await runSits(['explain', 'w', '--kubeconfig', kc, '--context', 'nope']);
    expect(unknown.code).toBe(2);
    expect(unknown.err).toBe(`sits: --context: no context "nope" in --kubeconfig ${kc} (known: one, two)\n`);
    const two = await runSits(['explain', 'w', '--kubeconfig', kc, '--context', 'two', '--json']);
    expect(two.code).toBe(1);
    expect(two.err).toMatch(/^sits explain: --json is deprecated, use -o json\nsits: apiserver https:\/\/127\.0\.0\.1:2: /);
    const current = await runSits(['explain', 'w', '--kubeconfig', kc]);
    expect(current.err).toMatch(/^sits: apiserver https:\/\/127\.0\.0\.1:1: /);
  });
});

describe('sits top --watch', () => {
  /** Runs `sits top queues --watch` on a pipe and sends SIGINT after three frames, to the process or its whole group. */
  async function interruptedWatch(node: string, to: 'process' | 'group'): Promise<{ code: number | string | null; out: string; err: string }> {
    const child = spawn(node, [join(ROOT, 'bin/sits.mjs'), 'top', 'queues', '--sim', '--watch', '--interval', '0.2'], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: to === 'group',
    });
    let out = '';
    let err = '';
    let sent = false;
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const code = await new Promise<number | string | null>((res) => {
      child.stdout.setEncoding('utf8').on('data', (d: string) => {
        out += d;
        if ((out.match(/^--- \S+ ---$/gm) ?? []).length >= 3 && !sent) {
          sent = true;
          if (to === 'group') process.kill(-(child.pid ?? 0), 'SIGINT');
          else child.kill('SIGINT');
        }
      });
      child.on('close', (c, sig) => res(c ?? sig));
    });
    return { code, out, err };
  }

  it('on a pipe: a separator line per frame, and Ctrl-C (SIGINT) ends it with exit 0', async () => {
    const { code, out, err } = await interruptedWatch(process.execPath, 'process');
    expect(code, err).toBe(0);
    expect(out.split(/^--- \S+ ---$/m).filter((f) => /^QUEUE\s+COHORT/m.test(f)).length).toBeGreaterThanOrEqual(3);
  });

  // Under an older Node the wrapper and its Node 24 child both get a terminal's Ctrl-C, and the wrapper passes its
  // own on: two SIGINTs, which must still end the watch with exit 0.
  it.skipIf(OLD_NODE === undefined)(
    `through the wrapper under ${OLD_NODE ?? 'a Node older than 24 (none on PATH: skipped)'}: a Ctrl-C to the process group ends it with exit 0`,
    async () => {
      const { code, err } = await interruptedWatch(OLD_NODE ?? '', 'group');
      expect(code, err).toBe(0);
    },
  );

  it('on a terminal: clears and redraws in place, Ctrl-C ends it with exit 0', async () => {
    const CLEAR = `${String.fromCharCode(27)}[H${String.fromCharCode(27)}[2J`;
    const r = await sitsInPty(['top', 'queues', '--sim', '--watch', '--interval', '0.2', '--no-color'], { interruptWhen: (o) => o.split(CLEAR).length > 3 });
    expect(r.code, r.out).toBe(0);
    expect(r.out).not.toContain('--- ');
    expect(r.out.split(CLEAR).filter((f) => /QUEUE\s+COHORT/.test(f)).length).toBeGreaterThanOrEqual(3);
  });
});
