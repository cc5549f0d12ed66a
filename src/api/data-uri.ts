/**
 * The one parser of `pvc://<claim>/<path>` URIs (issue 36, finding 1): every reader of a batch URI (the worker pods'
 * mounts, the controller's own files) goes through `parsePvcUri`, and the CRD's pattern (`DATA_URI_PATTERN`) refuses
 * the same things at the apiserver. The path is kept to plain relative segments so that joining it to the claim's
 * folder can never leave it: no `.` or `..` segment, no empty segment (`//`, a leading `/`), no backslash, no `%`
 * (nothing is percent-decoded, so `%2e%2e` is refused rather than guessed at), no control character or NUL.
 * Symlinks are the file system's business: live/batch/batch-jobs.ts (resolveInClaim) resolves them and checks containment.
 */

export type PvcUri = { readonly ok: true; readonly claim: string; readonly path: string } | { readonly ok: false; readonly reason: string };

const CLAIM = '[a-z0-9]([-a-z0-9]*[a-z0-9])?';
/** One path segment: not `.` or `..`, none of `/ \ %` or a control character. */
const SEG_CHAR = '[^/\\\\%\\x00-\\x1f\\x7f]';
const SEG_NO_DOT = '[^/\\\\%.\\x00-\\x1f\\x7f]';
const SEGMENT = `(${SEG_NO_DOT}${SEG_CHAR}*|\\.${SEG_NO_DOT}${SEG_CHAR}*|\\.\\.${SEG_CHAR}+)`;
const PVC = `pvc://${CLAIM}(/(${SEGMENT}(/${SEGMENT})*/?)?)?`;
/** Any other scheme (s3, hf, ...): not `pvc`, and no backslash, control character or `.`/`..` segment either. */
const NOT_PVC_SCHEME = '([a-oq-z][-a-z0-9+.]*|p|p[-a-uw-z0-9+.][-a-z0-9+.]*|pv|pv[-abd-z0-9+.][-a-z0-9+.]*|pvc[-a-z0-9+.]+)';
const OTHER_CHAR = '[^/\\\\\\x00-\\x1f\\x7f]';
const OTHER_NO_DOT = '[^/\\\\.\\x00-\\x1f\\x7f]';
const OTHER_SEGMENT = `(${OTHER_NO_DOT}${OTHER_CHAR}*|\\.${OTHER_NO_DOT}${OTHER_CHAR}*|\\.\\.${OTHER_CHAR}+)?`;
const OTHER = `${NOT_PVC_SCHEME}://${OTHER_SEGMENT}(/${OTHER_SEGMENT})*`;

/** The CRD pattern of a data URI (RE2 and ECMAScript alike: no lookaround). */
export const DATA_URI_PATTERN = `^(${PVC}|${OTHER})$`;

const PVC_RE = new RegExp(`^pvc://(${CLAIM})(/(.*))?$`, 's');

/** `pvc://claim/some/path` → claim and a relative path that stays inside the claim; the reason otherwise. */
export function parsePvcUri(uri: string): PvcUri {
  const m = PVC_RE.exec(uri);
  if (m === null)
    return {
      ok: false,
      reason: uri.startsWith('pvc://') ? 'the claim is not a DNS label (pvc://<claim>/<path>)' : 'only pvc://<claim>/<path> URIs are served',
    };
  const claim = m[1] as string;
  const rest = m[4] ?? '';
  // eslint-disable-next-line no-control-regex -- refusing control characters is the point
  if (/[\x00-\x1f\x7f]/.test(rest)) return { ok: false, reason: 'the path holds a control character (NUL, newline, ...)' };
  if (rest.includes('\\')) return { ok: false, reason: 'the path holds a backslash' };
  if (rest.includes('%')) return { ok: false, reason: 'the path holds a % (percent-encoding is not decoded; write the path plainly)' };
  if (rest.startsWith('/')) return { ok: false, reason: 'the path is absolute (pvc://<claim>/<relative path>)' };
  const segs = rest.replace(/\/$/, '').split('/');
  if (rest !== '' && segs.some((s) => s === '')) return { ok: false, reason: 'the path has an empty segment (//)' };
  if (segs.some((s) => s === '.' || s === '..')) return { ok: false, reason: 'the path has a . or .. segment: it must stay inside its claim' };
  return { ok: true, claim, path: rest === '' ? '' : segs.join('/') };
}

const OTHER_RE = new RegExp(`^${NOT_PVC_SCHEME}://(.*)$`, 's');

/**
 * Any data or model URI the CRDs take (`DATA_URI_PATTERN`, the same rule): `pvc://` as `parsePvcUri`; another
 * scheme (`s3`, `hf`, `oci`, ...: lower-case, not `pvc`) with no `.` or `..` segment, backslash or control
 * character, so no reader that joins it onto a bucket or folder is led outside. The reason says which.
 */
export function parseDataUri(uri: string): { readonly ok: true } | { readonly ok: false; readonly reason: string } {
  if (uri.startsWith('pvc://')) {
    const r = parsePvcUri(uri);
    return r.ok ? { ok: true } : r;
  }
  const m = OTHER_RE.exec(uri);
  if (m === null) return { ok: false, reason: 'not a URI: want <scheme>://<location> with a lower-case scheme (pvc, s3, gs, hf, oci, ...)' };
  const rest = m[m.length - 1] as string;
  // eslint-disable-next-line no-control-regex -- refusing control characters is the point
  if (/[\x00-\x1f\x7f]/.test(rest)) return { ok: false, reason: 'the location holds a control character (NUL, newline, ...)' };
  if (rest.includes('\\')) return { ok: false, reason: 'the location holds a backslash' };
  if (rest.split('/').some((s) => s === '.' || s === '..')) return { ok: false, reason: 'the location has a . or .. segment' };
  return { ok: true };
}

/** A path inside a claim (`subPath`): relative plain segments, as the path of a `pvc://` URI. Empty is the claim's root. */
export const SUB_PATH_PATTERN = `^(${SEGMENT}(/${SEGMENT})*/?)?$`;
/** A path in a container (`mountPath`): absolute plain segments, so that comparing two of them as text is comparing the places. */
export const MOUNT_PATH_PATTERN = `^(/${SEGMENT})+/?$`;

/** `parsePvcUri`'s path rule for a path alone; `absolute` for a mount path (a leading `/`, not the root alone). */
export function parsePlainPath(path: string, absolute: boolean): { readonly ok: true } | { readonly ok: false; readonly reason: string } {
  const r = parsePvcUri(`pvc://x/${absolute ? path.slice(1) : path}`);
  if (absolute && !path.startsWith('/')) return { ok: false, reason: 'the path is not absolute (it starts with /)' };
  if (absolute && path.replace(/\/$/, '') === '') return { ok: false, reason: 'the path is the root (/): name a folder' };
  return r.ok
    ? { ok: true }
    : {
        ok: false,
        reason: absolute
          ? r.reason.replace('the path is absolute (pvc://<claim>/<relative path>)', 'the path has an empty segment (//)')
          : r.reason.replace(' (pvc://<claim>/<relative path>)', ': want a path relative to the claim'),
      };
}
