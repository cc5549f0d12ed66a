/**
 * `sits run --config FILE`: several scheduling profiles in one process, as kube-scheduler's
 * KubeSchedulerConfiguration `profiles[]` (ADR 0076). Each profile has its own schedulerName and its own
 * plugin set and weights, built on a named SITS profile; every error names the file, line, column and field.
 *
 *   apiVersion: ai.sits2026.dev/v1
 *   kind: SchedulerConfiguration
 *   profiles:
 *     - schedulerName: sits-scheduler          # the pods with this spec.schedulerName
 *       profile: sits                          # the named profile it starts from (default sits)
 *       weights: {inter-pod-affinity: 5}       # change the weights of its scorers (0 drops one), or
 *       scorers: [{name: fgd, weight: 1}]      # replace its scorers; also filters, devicePicker
 *       hardPodAffinityWeight: 1               # kube's InterPodAffinityArgs (0..100)
 *       gangChoice: step-time                  # step-time (ADR 0105), step-aware (sits's default, ADR 0188) or first-fit
 *       podTopologySpread:                     # kube's PodTopologySpreadArgs
 *         defaultingType: List                 # System (kube's built-in defaults) or List
 *         defaultConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway}]
 */
import { Type, type Static } from '@sinclair/typebox';
import { buildProfile, formatProfileError, PLUGIN_NAMES, profileConfig, PROFILE_NAMES, type ProfileConfig } from '../core/plugins/registry.ts';
import { SYSTEM_DEFAULT_SPREAD, type SpreadDefaults } from '../core/framework/types.ts';
import { err, ok, type Result } from '../core/result.ts';
import { InputError, issueAt, parseYaml, validateYaml, type InputIssue } from './yaml-source.ts';

export const SCHEDULER_CONFIG_API_VERSION = 'ai.sits2026.dev/v1';
export const SCHEDULER_CONFIG_KIND = 'SchedulerConfiguration';

const DNS_SUBDOMAIN = '^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$';
const ScorerT = Type.Object({ name: Type.String({ minLength: 1 }), weight: Type.Number({ minimum: 0 }) }, { additionalProperties: false });
const ConstraintT = Type.Object(
  {
    maxSkew: Type.Integer({ minimum: 1 }),
    topologyKey: Type.String({ minLength: 1 }),
    whenUnsatisfiable: Type.Union([Type.Literal('DoNotSchedule'), Type.Literal('ScheduleAnyway')]),
  },
  { additionalProperties: false },
);
const ProfileT = Type.Object(
  {
    schedulerName: Type.String({ pattern: DNS_SUBDOMAIN }),
    profile: Type.Optional(Type.String({ minLength: 1 })),
    filters: Type.Optional(Type.Array(Type.String({ minLength: 1 }))),
    scorers: Type.Optional(Type.Array(ScorerT)),
    weights: Type.Optional(Type.Record(Type.String({ minLength: 1 }), Type.Number({ minimum: 0 }))),
    devicePicker: Type.Optional(Type.String({ minLength: 1 })),
    hardPodAffinityWeight: Type.Optional(Type.Integer({ minimum: 0, maximum: 100 })),
    gangChoice: Type.Optional(Type.Union([Type.Literal('step-time'), Type.Literal('step-aware'), Type.Literal('first-fit')])),
    podTopologySpread: Type.Optional(
      Type.Object(
        {
          defaultingType: Type.Optional(Type.Union([Type.Literal('System'), Type.Literal('List')])),
          defaultConstraints: Type.Optional(Type.Array(ConstraintT)),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
const ConfigT = Type.Object(
  {
    apiVersion: Type.Literal(SCHEDULER_CONFIG_API_VERSION),
    kind: Type.Literal(SCHEDULER_CONFIG_KIND),
    profiles: Type.Array(ProfileT, { minItems: 1 }),
  },
  { additionalProperties: false },
);
type ProfileInput = Static<typeof ProfileT>;

/** One profile of the process: the pods it schedules and its resolved configuration. */
export interface SchedulerProfileSpec {
  readonly schedulerName: string;
  readonly config: ProfileConfig;
}

/** The profile `sits run --scheduler-name N --profile P` means without a file. */
export function singleProfile(schedulerName: string, profile: string): Result<SchedulerProfileSpec, string> {
  const cfg = profileConfig(profile);
  if (cfg === undefined) return err(`unknown profile "${profile}" (known: ${PROFILE_NAMES.join(', ')})`);
  return ok({ schedulerName, config: cfg });
}

export function loadSchedulerConfig(file: string, text: string): Result<readonly SchedulerProfileSpec[], InputError> {
  const src = parseYaml(file, text);
  if (!src.ok) return src;
  const v = validateYaml(src.value, ConfigT);
  if (!v.ok) return v;
  const issues: InputIssue[] = [];
  const at = (path: readonly (string | number)[], m: string): void => void issues.push(issueAt(src.value, ['profiles', ...path], m));
  const seen = new Map<string, number>();
  const out: SchedulerProfileSpec[] = [];
  v.value.profiles.forEach((p, i) => {
    const first = seen.get(p.schedulerName);
    if (first !== undefined)
      at([i, 'schedulerName'], `"${p.schedulerName}" is already the name of profiles[${first}] (each profile needs its own schedulerName)`);
    else seen.set(p.schedulerName, i);
    const cfg = profileFrom(p, (path, m) => at([i, ...path], m));
    if (cfg !== undefined) out.push({ schedulerName: p.schedulerName, config: cfg });
  });
  return issues.length > 0 ? err(new InputError(issues)) : ok(out);
}

/** One profile entry on its base profile; undefined (with issues reported) when it is wrong. */
function profileFrom(p: ProfileInput, bad: (path: readonly (string | number)[], m: string) => void): ProfileConfig | undefined {
  const baseName = p.profile ?? 'sits';
  const base = profileConfig(baseName);
  if (base === undefined) {
    bad(['profile'], `unknown profile "${baseName}" (known: ${PROFILE_NAMES.join(', ')})`);
    return undefined;
  }
  let ok = true;
  const known = (name: string, path: readonly (string | number)[]): void => {
    if (!(PLUGIN_NAMES as readonly string[]).includes(name)) {
      bad(path, `unknown plugin "${name}" (known: ${PLUGIN_NAMES.join(', ')})`);
      ok = false;
    }
  };
  p.filters?.forEach((f, k) => known(f, ['filters', k]));
  p.scorers?.forEach((s, k) => known(s.name, ['scorers', k, 'name']));
  if (p.devicePicker !== undefined) known(p.devicePicker, ['devicePicker']);
  if (p.scorers !== undefined && p.weights !== undefined) {
    bad(['weights'], "give scorers (the whole list) or weights (changes to the base profile's), not both");
    ok = false;
  }
  let scorers = p.scorers ?? base.scorers;
  if (p.weights !== undefined) {
    const names = new Set(base.scorers.map((s) => s.name));
    for (const k of Object.keys(p.weights)) {
      if (!names.has(k)) {
        bad(['weights', k], `profile ${baseName} has no scorer "${k}" (its scorers: ${[...names].join(', ') || 'none'}); list scorers to add one`);
        ok = false;
      }
    }
    const w = p.weights;
    scorers = base.scorers.map((s) => ({ name: s.name, weight: w[s.name] ?? s.weight })).filter((s) => s.weight > 0);
  }
  const spread = spreadDefaultsOf(p, bad);
  if (!ok || spread === null) return undefined;
  // first-fit undoes a base profile's gang choice (sits-step's step-time, sits's step-aware).
  const { gangChoice: _baseChoice, ...baseRest } = base;
  const cfg: ProfileConfig = {
    ...(p.gangChoice === 'first-fit' ? baseRest : base),
    name: baseName,
    ...(p.filters === undefined ? {} : { filters: p.filters }),
    scorers,
    ...(p.devicePicker === undefined ? {} : { devicePicker: p.devicePicker }),
    ...(p.hardPodAffinityWeight === undefined ? {} : { hardPodAffinityWeight: p.hardPodAffinityWeight }),
    ...(p.gangChoice === 'step-time' || p.gangChoice === 'step-aware' ? { gangChoice: p.gangChoice } : {}),
    ...(spread === undefined ? {} : { spreadDefaults: spread }),
  };
  // The plugins must also implement the points they are named for (a filter that cannot filter …).
  const built = buildProfile(cfg, { typicalShapes: [] });
  if (!built.ok) {
    const e = built.error;
    bad(e.code === 'MissingExtensionPoint' ? pointPath(p, e.point, e.name) : ['profile'], formatProfileError(e));
    return undefined;
  }
  return cfg;
}

/** Where a plugin named for a point it does not implement was named (the base profile's own plugins never fail). */
function pointPath(p: ProfileInput, point: string, name: string): (string | number)[] {
  if (point === 'filter' && p.filters !== undefined) return ['filters', p.filters.indexOf(name)];
  if (point === 'score' && p.scorers !== undefined) return ['scorers', p.scorers.findIndex((s) => s.name === name), 'name'];
  if (point === 'pickGpus') return ['devicePicker'];
  return ['profile'];
}

/** kube's validation of PodTopologySpreadArgs: System takes no constraints of its own; List's are unique per key and effect. */
function spreadDefaultsOf(p: ProfileInput, bad: (path: readonly (string | number)[], m: string) => void): SpreadDefaults | undefined | null {
  const s = p.podTopologySpread;
  if (s === undefined) return undefined;
  const type = s.defaultingType ?? 'System';
  const list = s.defaultConstraints ?? [];
  if (type === 'System') {
    if (list.length > 0) {
      bad(
        ['podTopologySpread', 'defaultConstraints'],
        "must be empty when defaultingType is System (kube's built-in defaults apply); use defaultingType: List",
      );
      return null;
    }
    return SYSTEM_DEFAULT_SPREAD;
  }
  const keys = new Set<string>();
  let fine = true;
  list.forEach((c, k) => {
    const key = `${c.topologyKey}|${c.whenUnsatisfiable}`;
    if (keys.has(key)) {
      bad(['podTopologySpread', 'defaultConstraints', k], `a second constraint on ${c.topologyKey} with ${c.whenUnsatisfiable}`);
      fine = false;
    }
    keys.add(key);
  });
  return fine ? { defaultingType: 'List', constraints: list } : null;
}
