import { describe, expect, it } from 'vitest';
import { loadSchedulerConfig, singleProfile } from './scheduler-config.ts';
import { PROFILES } from '../core/plugins/registry.ts';
import { SYSTEM_DEFAULT_SPREAD } from '../core/framework/types.ts';

const yaml = (...lines: string[]): string => `${lines.join('\n')}\n`;
const head = ['apiVersion: ai.sits2026.dev/v1', 'kind: SchedulerConfiguration', 'profiles:'];

function messages(text: string): string[] {
  const r = loadSchedulerConfig('sched.yaml', text);
  if (r.ok) throw new Error('expected an input error');
  return r.error.message.split('\n');
}

describe('loadSchedulerConfig: valid files', () => {
  it('reads several profiles, each on its base profile with its own weights, scorers and args', () => {
    const r = loadSchedulerConfig(
      'sched.yaml',
      yaml(
        ...head,
        '  - schedulerName: sits-scheduler',
        '  - schedulerName: spread-scheduler',
        '    profile: kube-default',
        '    weights: {least-allocated: 0, inter-pod-affinity: 5}',
        '    hardPodAffinityWeight: 0',
        '    podTopologySpread:',
        '      defaultingType: List',
        '      defaultConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway}]',
        '  - schedulerName: fgd-scheduler',
        '    profile: sits',
        '    scorers: [{name: fgd, weight: 1}]',
        '    devicePicker: fgd',
        '    podTopologySpread: {defaultingType: System}',
      ),
    );
    if (!r.ok) throw r.error;
    const [a, b, c] = r.value;
    expect(a?.schedulerName).toBe('sits-scheduler');
    expect(a?.config).toEqual(PROFILES.sits);
    expect(b?.schedulerName).toBe('spread-scheduler');
    expect(b?.config.scorers).toEqual([
      { name: 'balanced-allocation', weight: 1 },
      { name: 'node-affinity', weight: 2 },
      { name: 'taint-toleration', weight: 3 },
      { name: 'pod-topology-spread', weight: 2 },
      { name: 'inter-pod-affinity', weight: 5 },
    ]);
    expect(b?.config.hardPodAffinityWeight).toBe(0);
    expect(b?.config.spreadDefaults).toEqual({
      defaultingType: 'List',
      constraints: [{ maxSkew: 1, topologyKey: 'topology.kubernetes.io/zone', whenUnsatisfiable: 'ScheduleAnyway' }],
    });
    expect(c?.config.scorers).toEqual([{ name: 'fgd', weight: 1 }]);
    expect(c?.config.devicePicker).toBe('fgd');
    expect(c?.config.spreadDefaults).toEqual(SYSTEM_DEFAULT_SPREAD);
  });

  it('the one-profile command line means the named profile unchanged', () => {
    const r = singleProfile('default-scheduler', 'kube-default');
    expect(r.ok && r.value).toEqual({ schedulerName: 'default-scheduler', config: PROFILES['kube-default'] });
    expect(singleProfile('x', 'nope')).toEqual({ ok: false, error: expect.stringContaining('unknown profile "nope"') });
  });
});

describe('loadSchedulerConfig: bad input names the file, line, column and field', () => {
  it('YAML syntax and the document shape', () => {
    expect(messages('profiles: [\n')[0]).toMatch(/^sched\.yaml:\d+:\d+: YAML: /);
    expect(messages(yaml('apiVersion: v1', 'kind: SchedulerConfiguration', 'profiles: []'))).toEqual([
      'sched.yaml:1:13: apiVersion: Expected \'ai.sits2026.dev/v1\' (got "v1")',
      'sched.yaml:3:11: profiles: Expected array length to be greater or equal to 1 (got [])',
    ]);
    expect(messages(yaml(...head, '  - schedulerName: Not_A_Name', '    colour: blue'))).toEqual([
      'sched.yaml:5:13: profiles[0].colour: unknown field',
      'sched.yaml:4:20: profiles[0].schedulerName: Expected string to match \'^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$\' (got "Not_A_Name")',
    ]);
  });

  it('two profiles with one name, an unknown profile or plugin, a plugin at a point it does not implement', () => {
    expect(messages(yaml(...head, '  - schedulerName: a', '  - schedulerName: a'))).toEqual([
      'sched.yaml:5:20: profiles[1].schedulerName: "a" is already the name of profiles[0] (each profile needs its own schedulerName)',
    ]);
    expect(messages(yaml(...head, '  - schedulerName: a', '    profile: fastest'))).toEqual([
      expect.stringMatching(/^sched\.yaml:5:14: profiles\[0\]\.profile: unknown profile "fastest" \(known: sits, /),
    ]);
    expect(messages(yaml(...head, '  - schedulerName: a', '    scorers: [{name: fit, weight: 1}, {name: magic, weight: 2}]'))[0]).toMatch(
      /^sched\.yaml:5:46: profiles\[0\]\.scorers\[1\]\.name: unknown plugin "magic" \(known: priority-fifo, /,
    );
    expect(messages(yaml(...head, '  - schedulerName: a', '    scorers: [{name: fit, weight: 1}]'))).toEqual([
      'sched.yaml:5:22: profiles[0].scorers[0].name: profile sits: plugin "fit" does not implement score',
    ]);
  });

  it('weights only for the base profile’s scorers, not with scorers; kube’s rules for spread defaults and hardPodAffinityWeight', () => {
    expect(messages(yaml(...head, '  - schedulerName: a', '    profile: fgd', '    weights: {least-allocated: 1}'))).toEqual([
      'sched.yaml:6:32: profiles[0].weights.least-allocated: profile fgd has no scorer "least-allocated" (its scorers: fgd, node-affinity, taint-toleration, pod-topology-spread, inter-pod-affinity); list scorers to add one',
    ]);
    expect(messages(yaml(...head, '  - schedulerName: a', '    weights: {sits-frag: 1}', '    scorers: [{name: fgd, weight: 1}]'))).toEqual([
      "sched.yaml:5:14: profiles[0].weights: give scorers (the whole list) or weights (changes to the base profile's), not both",
    ]);
    expect(
      messages(
        yaml(
          ...head,
          '  - schedulerName: a',
          '    podTopologySpread:',
          '      defaultConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]',
        ),
      ),
    ).toEqual([
      "sched.yaml:6:27: profiles[0].podTopologySpread.defaultConstraints: must be empty when defaultingType is System (kube's built-in defaults apply); use defaultingType: List",
    ]);
    expect(
      messages(
        yaml(
          ...head,
          '  - schedulerName: a',
          '    podTopologySpread: {defaultingType: List, defaultConstraints: [{maxSkew: 0, topologyKey: z, whenUnsatisfiable: Maybe}]}',
        ),
      ),
    ).toEqual([
      'sched.yaml:5:78: profiles[0].podTopologySpread.defaultConstraints[0].maxSkew: Expected integer to be greater or equal to 1 (got 0)',
      'sched.yaml:5:116: profiles[0].podTopologySpread.defaultConstraints[0].whenUnsatisfiable: "Maybe" is not one of "DoNotSchedule", "ScheduleAnyway"',
    ]);
    expect(messages(yaml(...head, '  - schedulerName: a', '    hardPodAffinityWeight: 101'))).toEqual([
      'sched.yaml:5:28: profiles[0].hardPodAffinityWeight: Expected integer to be less or equal to 100 (got 101)',
    ]);
  });
});
