import { describe, expect, it } from 'vitest';
import { loadSchedulerConfig } from './scheduler-config.ts';
import { PROFILES } from '../core/plugins/registry.ts';

const yaml = (...lines: string[]): string => `${lines.join('\n')}\n`;
const head = ['apiVersion: ai.sits2026.dev/v1', 'kind: SchedulerConfiguration', 'profiles:'];

describe('loadSchedulerConfig: gangChoice (ADR 0105)', () => {
  it('step-time turns the choice on for any base profile; first-fit turns sits-step’s off; absent keeps the base', () => {
    const r = loadSchedulerConfig(
      'sched.yaml',
      yaml(
        ...head,
        '  - schedulerName: a',
        '    gangChoice: step-time',
        '  - schedulerName: b',
        '    profile: sits-step',
        '    gangChoice: first-fit',
        '  - schedulerName: c',
        '  - schedulerName: d',
        '    gangChoice: first-fit',
        '  - schedulerName: e',
        '    profile: kube-default',
        '    gangChoice: step-aware',
      ),
    );
    if (!r.ok) throw r.error;
    const [a, b, c, d, e] = r.value;
    expect(a?.config.gangChoice).toBe('step-time');
    expect(b?.config.gangChoice).toBeUndefined();
    expect(b?.config.scorers).toEqual(PROFILES['sits-step']?.scorers);
    expect(c?.config).toEqual(PROFILES.sits);
    // sits's own step-aware choice (ADR 0188) is turned off by first-fit and on for another profile by name.
    expect(c?.config.gangChoice).toBe('step-aware');
    expect(d?.config.gangChoice).toBeUndefined();
    expect(e?.config.gangChoice).toBe('step-aware');
  });

  it('any other value is an error naming file, line, column and field', () => {
    const r = loadSchedulerConfig('sched.yaml', yaml(...head, '  - schedulerName: a', '    gangChoice: fastest'));
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.error.message).toMatch(/^sched\.yaml:5:17: profiles\[0\]\.gangChoice: /);
  });
});
