import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runSits } from '../testing/sits-cli.ts';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { buildCrds } from '../api/crd.ts';
import { deployFiles } from '../deploy/bundle.ts';

const root = join(import.meta.dirname, '../..');
const sits = runSits;
const tmp = mkdtempSync(join(tmpdir(), 'sits-deploy-cli-'));

describe('sits crds', () => {
  it('prints every CRD, PodGroup included', async () => {
    const r = await sits(['crds']);
    expect(r.code).toBe(0);
    const docs = parseAllDocuments(r.out).map((d) => d.toJS() as { metadata: { name: string } });
    expect(docs).toEqual(buildCrds());
    expect(docs.map((d) => d.metadata.name)).toContain('podgroups.ai.sits2026.dev');
  });
});

describe('sits deploy', () => {
  it('--out writes what deploy/ holds', async () => {
    const out = join(tmp, 'default');
    const r = await sits(['deploy', '--out', out]);
    expect(r.code, r.err).toBe(0);
    expect(r.out).toMatch(/^wrote \d+ of \d+ files to /);
    for (const f of deployFiles()) {
      expect(readFileSync(join(out, f.path), 'utf8'), f.path).toBe(f.content);
      expect(readFileSync(join(root, 'deploy', f.path), 'utf8'), f.path).toBe(f.content);
    }
    expect(readFileSync(join(out, 'crds/ai.sits2026.dev_podgroups.yaml'), 'utf8')).toBe(
      readFileSync(join(root, 'deploy/crds/ai.sits2026.dev_podgroups.yaml'), 'utf8'),
    );
  });

  it('--values overrides the defaults everywhere, the chart included', async () => {
    const values = join(tmp, 'values.yaml');
    writeFileSync(values, 'replicas: 3\nimage: {tag: "1.2.3"}\n');
    const out = join(tmp, 'custom');
    expect((await sits(['deploy', '--out', out, '--values', values])).code).toBe(0);
    const docs = parseAllDocuments(readFileSync(join(out, 'sits.yaml'), 'utf8')).map(
      (d) => d.toJS() as { kind: string; spec?: { replicas?: number; template?: { spec?: { containers?: { image: string }[] } } } },
    );
    const dep = docs.find((d) => d.kind === 'Deployment');
    expect(dep?.spec?.replicas).toBe(3);
    expect(dep?.spec?.template?.spec?.containers?.[0]?.image).toBe('registry.sits2026.dev/sits/sits:1.2.3');
    expect(parseYaml(readFileSync(join(out, 'helm/sits/values.yaml'), 'utf8'))).toMatchObject({
      replicas: 3,
      image: { tag: '1.2.3', pullPolicy: 'IfNotPresent' },
    });
  });

  it('--out writes the RBAC audit table for the values given (rbac.md, rbac.json; ADR 0175)', async () => {
    const values = join(tmp, 'rbac-values.yaml');
    writeFileSync(values, 'activator: {enabled: true}\ncontrollers: {quarantineGpus: true}\n');
    const out = join(tmp, 'rbac');
    expect((await sits(['deploy', '--out', out, '--values', values])).code).toBe(0);
    const table = JSON.parse(readFileSync(join(out, 'rbac.json'), 'utf8')) as {
      roles: { kind: string; name: string; enabled: boolean; rules: { resources?: string[]; verbs: string[]; when?: string; why: string }[] }[];
    };
    expect(table.roles.find((r) => r.kind === 'ClusterRole' && r.name === 'sits-activator')?.enabled).toBe(true);
    expect(table.roles.find((r) => r.kind === 'ClusterRole' && r.name === 'sits-extender')?.enabled).toBe(false);
    const quarantine = table.roles
      .find((r) => r.kind === 'ClusterRole' && r.name === 'sits-controllers')
      ?.rules.find((x) => x.when === 'controllers.quarantineGpus');
    expect(quarantine?.verbs).toEqual(['patch']);
    expect(quarantine?.why).toMatch(/quarantine/);
    const md = readFileSync(join(out, 'rbac.md'), 'utf8');
    expect(md).toContain('## ClusterRole sits-scheduler');
    expect(md).toContain('| `controllers.quarantineGpus` |');
    expect(md).not.toContain('`controllers.quarantineGpus` (off)');
  });

  it('names the bad value, exit code 2', async () => {
    const values = join(tmp, 'bad.yaml');
    writeFileSync(values, 'replicas: 2\nleaderElection: {enabled: false}\nmetrics: {port: 80}\n');
    const r = await sits(['deploy', '--out', join(tmp, 'bad'), '--values', values]);
    expect(r.code).toBe(2);
    expect(r.err).toContain('values.metrics.port');
    expect((await sits(['deploy'])).code).toBe(2); // --out is required
  });

  it('sits run documents --metrics-port', async () => {
    expect((await sits(['run', '--help'])).out).toContain('--metrics-port <port>');
  });
});
