import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { afterAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';

import { kueueConfigYaml, kueueCrds } from './kueue.ts';

const dir = mkdtempSync(join(tmpdir(), 'kueue-crds-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('kueueConfigYaml', () => {
  const base = { webhookPort: 9555, healthPort: 9556, certDir: '/tmp/c', frameworks: ['batch/job'] };
  it('turns fair sharing on by the section being there (v1beta2 has no enable field), off by leaving it out', () => {
    const on = parse(kueueConfigYaml({ ...base, fairSharing: { preemptionStrategies: ['LessThanInitialShare'] } })) as Record<string, unknown>;
    expect(on).toMatchObject({
      apiVersion: 'config.kueue.x-k8s.io/v1beta2',
      kind: 'Configuration',
      fairSharing: { preemptionStrategies: ['LessThanInitialShare'] },
    });
    expect(parse(kueueConfigYaml({ ...base, fairSharing: undefined }))).toMatchObject({
      fairSharing: { preemptionStrategies: ['LessThanOrEqualToFinalShare', 'LessThanInitialShare'] },
    });
    expect(parse(kueueConfigYaml({ ...base, fairSharing: false }))).not.toHaveProperty('fairSharing');
  });
  it('binds its ports on loopback, keeps internal cert management, and names the integrations', () => {
    const c = parse(kueueConfigYaml({ ...base, fairSharing: false })) as Record<string, unknown>;
    expect(c).toMatchObject({
      health: { healthProbeBindAddress: '127.0.0.1:9556' },
      webhook: { host: '127.0.0.1', port: 9555, certDir: '/tmp/c' },
      metrics: { bindAddress: '0' },
      internalCertManagement: { enable: true },
      leaderElection: { leaderElect: false },
      integrations: { frameworks: ['batch/job'] },
    });
  });
});

describe('kueueCrds', () => {
  it('serves only the storage version, and gives the five CRDs the cert rotator injects into a conversion webhook on the manager port', () => {
    mkdirSync(join(dir, 'crds'));
    writeFileSync(
      join(dir, 'crds', 'w.yaml'),
      'apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: workloads.kueue.x-k8s.io\nspec:\n  group: kueue.x-k8s.io\n  versions:\n  - name: v1beta1\n    served: true\n  - name: v1beta2\n    served: true\n    storage: true\n',
    );
    writeFileSync(
      join(dir, 'crds', 't.yaml'),
      'apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: topologies.kueue.x-k8s.io\nspec:\n  group: kueue.x-k8s.io\n',
    );
    const crds = kueueCrds(dir, 9555) as { metadata: { name: string }; spec: Record<string, unknown> }[];
    const byName = new Map(crds.map((c) => [c.metadata.name, c]));
    expect(byName.get('workloads.kueue.x-k8s.io')?.spec).toEqual({
      group: 'kueue.x-k8s.io',
      versions: [{ name: 'v1beta2', served: true, storage: true }],
      conversion: { strategy: 'Webhook', webhook: { conversionReviewVersions: ['v1'], clientConfig: { url: 'https://127.0.0.1:9555/convert' } } },
    });
    expect(byName.get('topologies.kueue.x-k8s.io')?.spec).toEqual({ group: 'kueue.x-k8s.io' });
  });
  it('fails when the folder holds no CRDs', () => {
    const empty = mkdtempSync(join(dir, 'empty-'));
    mkdirSync(join(empty, 'crds'));
    expect(() => kueueCrds(empty, 1)).toThrow('no Kueue CRDs');
  });
});
