/**
 * Step caching for DataPipeline runs (issue 17, Deliver 5): a step of a new run that already succeeded with the
 * same inputs in an earlier run is not run again; its outputs are reused. Like Argo's memoization and Kubeflow
 * Pipelines' cache, the identity of a step's work is a hash over what determines its result:
 *  - the step's resolved spec (after parameter substitution), as canonical JSON (RFC 8785, the `canonicalize`
 *    package): key order never changes the key;
 *  - its input artifacts' identities: a volume snapshot by name and uid (a re-created snapshot of the same name is
 *    other data), a path on a volume by claim, path and content id; sorted by input name, so list order does not
 *    matter either;
 *  - the image digest when the image is pinned (a tag alone may move; the tag is still in the spec).
 * Pure: no clock (now is an argument), no I/O; sha256 from @noble/hashes (the controllers layer has no node:crypto).
 */
import canonicalize from 'canonicalize';
import { sha256 } from '@noble/hashes/sha2.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { err, ok, type Result } from '../../core/result.ts';
import type { CacheEntry } from './model.ts';

/** A field of the input that is wrong, by its path (e.g. `inputs[1].uid`), and why. */
export interface FieldError {
  readonly field: string;
  readonly message: string;
}

/** What an input artifact is, as far as its content is concerned. */
export type ArtifactIdentity =
  | { readonly kind: 'snapshot'; readonly name: string; readonly uid: string }
  | { readonly kind: 'volume'; readonly claim: string; readonly path: string; readonly contentId: string };

export interface StepInput {
  /** The step's input name (what the step mounts it as). */
  readonly name: string;
  readonly artifact: ArtifactIdentity;
}

export interface StepCacheInput {
  /** The step's spec after parameter substitution: plain JSON data. */
  readonly spec: unknown;
  readonly inputs: readonly StepInput[];
  /** `sha256:<64 hex>` when the step's image is pinned by digest. */
  readonly imageDigest?: string;
}

/** Bumped when what goes into a key changes, so that old entries stop matching. */
export const CACHE_KEY_VERSION = 'ai.sits2026.dev/step-cache/v1';

const DIGEST = /^sha256:[0-9a-f]{64}$/;

/** The first value in `v` that JSON cannot carry faithfully, by path; undefined when it is all plain data. */
function nonJson(v: unknown, path: string): FieldError | undefined {
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return undefined;
  if (typeof v === 'number') return Number.isFinite(v) ? undefined : { field: path, message: `${String(v)} is not a JSON number` };
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const e = nonJson(v[i], `${path}[${i}]`);
      if (e !== undefined) return e;
    }
    return undefined;
  }
  if (typeof v === 'object') {
    const proto = Object.getPrototypeOf(v) as unknown;
    if (proto !== Object.prototype && proto !== null)
      return { field: path, message: `a ${(v as object).constructor?.name ?? 'non-plain'} object is not plain JSON data` };
    for (const [k, x] of Object.entries(v)) {
      // undefined members are absent in JSON (as in a Kubernetes object read back): allowed, and dropped.
      if (x === undefined) continue;
      const e = nonJson(x, `${path}.${k}`);
      if (e !== undefined) return e;
    }
    return undefined;
  }
  return { field: path, message: `a ${typeof v} is not JSON data` };
}

function artifactError(a: ArtifactIdentity, path: string): FieldError | undefined {
  const empty = (k: string, s: string): FieldError | undefined => (s.length === 0 ? { field: `${path}.${k}`, message: 'must not be empty' } : undefined);
  if (a.kind === 'snapshot') return empty('name', a.name) ?? empty('uid', a.uid);
  if (a.kind === 'volume') return empty('claim', a.claim) ?? empty('path', a.path) ?? empty('contentId', a.contentId);
  return { field: `${path}.kind`, message: `unknown artifact kind ${JSON.stringify((a as { kind: unknown }).kind)}: snapshot or volume` };
}

/** The cache key of a step's work: `sha256:<hex>`, or the field that makes the input unusable. */
export function cacheKey(input: StepCacheInput): Result<string, FieldError> {
  const bad = nonJson(input.spec, 'spec');
  if (bad !== undefined) return err(bad);
  if (input.imageDigest !== undefined && !DIGEST.test(input.imageDigest))
    return err({ field: 'imageDigest', message: `${JSON.stringify(input.imageDigest)} is not sha256:<64 lowercase hex>` });
  const seen = new Set<string>();
  for (let i = 0; i < input.inputs.length; i++) {
    const x = input.inputs[i] as StepInput;
    if (x.name.length === 0) return err({ field: `inputs[${i}].name`, message: 'must not be empty' });
    if (seen.has(x.name)) return err({ field: `inputs[${i}].name`, message: `input ${x.name} is given twice` });
    seen.add(x.name);
    const e = artifactError(x.artifact, `inputs[${i}].artifact`);
    if (e !== undefined) return err(e);
  }
  const inputs = [...input.inputs].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map((x) => ({ name: x.name, artifact: x.artifact }));
  const text = canonicalize({ v: CACHE_KEY_VERSION, spec: input.spec, inputs, ...(input.imageDigest === undefined ? {} : { imageDigest: input.imageDigest }) });
  if (text === undefined) return err({ field: 'spec', message: 'cannot be written as JSON' });
  return ok(`sha256:${bytesToHex(sha256(utf8ToBytes(text)))}`);
}

export interface CachePolicy {
  /** The step's `cache: false` opts out. Default: true. */
  readonly enabled?: boolean;
  /** Reuse only results younger than this; unset: any age. */
  readonly maxAgeSeconds?: number;
}

export type CacheLookup =
  { readonly hit: true; readonly entry: CacheEntry; readonly ageSeconds: number; readonly reason: string } | { readonly hit: false; readonly reason: string };

const newestFirst = (a: CacheEntry, b: CacheEntry): number =>
  b.finishedAt.getTime() - a.finishedAt.getTime() || (a.run < b.run ? -1 : a.run > b.run ? 1 : 0) || (a.step < b.step ? -1 : a.step > b.step ? 1 : 0);

function age(sec: number): string {
  if (sec < 120) return `${Math.round(sec)}s`;
  if (sec < 7200) return `${Math.round(sec / 60)}m`;
  if (sec < 172_800) return `${Math.round(sec / 3600)}h`;
  return `${Math.round(sec / 86_400)}d`;
}

/**
 * The newest reusable success with `key` in `history` (any order), or a miss that says why. An entry is reusable
 * when it succeeded, its outputs still exist and it is within maxAge; an entry finished "in the future" (clock
 * skew between controller replicas) counts as age 0.
 */
export function lookup(key: string, history: readonly CacheEntry[], now: Date, policy: CachePolicy = {}): CacheLookup {
  if (policy.enabled === false) return { hit: false, reason: 'cache: false on this step' };
  const same = history.filter((e) => e.key === key).sort(newestFirst);
  if (same.length === 0) return { hit: false, reason: 'no earlier run of this step with the same spec and inputs' };
  const ok = same.filter((e) => e.phase === 'Succeeded');
  if (ok.length === 0) return { hit: false, reason: `earlier runs with the same inputs failed (${same.length}); failures are not reused` };
  const kept = ok.filter((e) => e.outputsAvailable !== false);
  if (kept.length === 0) return { hit: false, reason: `the outputs of ${ok[0]?.run}/${ok[0]?.step} were garbage-collected` };
  const newest = kept[0] as CacheEntry;
  const ageSeconds = Math.max(0, (now.getTime() - newest.finishedAt.getTime()) / 1000);
  if (policy.maxAgeSeconds !== undefined && ageSeconds > policy.maxAgeSeconds) {
    return { hit: false, reason: `the newest success (${newest.run}/${newest.step}) is ${age(ageSeconds)} old, over maxAge ${age(policy.maxAgeSeconds)}` };
  }
  return {
    hit: true,
    entry: newest,
    ageSeconds,
    reason: `reused ${newest.run}/${newest.step}, succeeded ${age(ageSeconds)} ago with the same spec and inputs`,
  };
}
