// Kubernetes resource quantities ("32Gi", "500m", 8) parsed exactly, so the TypeScript mirrors of CEL
// rules that use the apiserver's quantity() library agree with it, and so callers can turn quantities
// into the integer units the core uses (cpuMilli, memoryMiB).

/** A quantity as it appears in a manifest: an integer or a quantity string. */
export type QuantityValue = number | string;

/**
 * Same grammar as k8s.io/apimachinery resource.Quantity, restricted to non-negative values; written to
 * be valid both as an RE2 pattern (apiserver) and as a JavaScript RegExp (TypeBox).
 */
export const NON_NEGATIVE_QUANTITY_PATTERN = '^(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?[0-9]+))?$';

const QUANTITY_RE = /^([+-]?)(?:([0-9]+)(?:\.([0-9]*))?|\.([0-9]+))(?:(Ki|Mi|Gi|Ti|Pi|Ei)|([numkMGTPE])|[eE]([+-]?[0-9]+))?$/;

const DECIMAL_SUFFIX: Readonly<Record<string, number>> = { n: -9, u: -6, m: -3, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const BINARY_SUFFIX: Readonly<Record<string, number>> = { Ki: 10, Mi: 20, Gi: 30, Ti: 40, Pi: 50, Ei: 60 };
const NANO = 1_000_000_000n;
// Exponents beyond this are not meaningful for cluster resources and would make BigInt arithmetic explode.
const MAX_EXPONENT = 64;

/**
 * Parses a quantity into nano-units (value × 10^9) as an exact BigInt, rounding fractions of a
 * nano-unit up as Kubernetes does. Returns undefined when the value is not a valid quantity.
 */
export function quantityToNano(value: QuantityValue): bigint | undefined {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) return undefined;
    if (Number.isSafeInteger(value)) return BigInt(value) * NANO;
    return quantityToNano(String(value));
  }
  const m = QUANTITY_RE.exec(value.trim());
  if (!m || value.trim() !== value) return undefined;
  const [, sign, intPart, fracPart, onlyFrac, binary, decimal, exponent] = m;
  const whole = intPart ?? '';
  const frac = fracPart ?? onlyFrac ?? '';
  const digits = BigInt((whole + frac).replace(/^0+(?=.)/, '') || '0');
  let exp10 = -frac.length;
  let exp2 = 0;
  if (binary !== undefined) exp2 = BINARY_SUFFIX[binary] ?? 0;
  else if (decimal !== undefined) exp10 += DECIMAL_SUFFIX[decimal] ?? 0;
  else if (exponent !== undefined) {
    const e = Number(exponent);
    if (Math.abs(e) > MAX_EXPONENT) return undefined;
    exp10 += e;
  }
  let num = digits * 2n ** BigInt(exp2);
  const scale = exp10 + 9;
  if (scale >= 0) num *= 10n ** BigInt(scale);
  else {
    const div = 10n ** BigInt(-scale);
    num = (num + div - 1n) / div;
  }
  return sign === '-' ? -num : num;
}

/** True when the value parses as a quantity. */
export function isQuantity(value: unknown): value is QuantityValue {
  return (typeof value === 'number' || typeof value === 'string') && quantityToNano(value) !== undefined;
}

/** Compares two quantities (-1, 0, 1); undefined when either does not parse. */
export function compareQuantities(a: QuantityValue, b: QuantityValue): -1 | 0 | 1 | undefined {
  const x = quantityToNano(a);
  const y = quantityToNano(b);
  if (x === undefined || y === undefined) return undefined;
  return x < y ? -1 : x > y ? 1 : 0;
}

/** True when the quantity is a whole number of base units (e.g. GPUs, which cannot be fractional). */
export function isWholeQuantity(value: QuantityValue): boolean {
  const n = quantityToNano(value);
  return n !== undefined && n % NANO === 0n;
}

/** Rounds a quantity up to thousandths of the base unit (CPU "500m" → 500). */
export function quantityToMilli(value: QuantityValue): number | undefined {
  const n = quantityToNano(value);
  if (n === undefined) return undefined;
  return Number(ceilDiv(n, 1_000_000n));
}

/** Rounds a byte quantity up to mebibytes ("32Gi" → 32768). */
export function quantityToMiB(value: QuantityValue): number | undefined {
  const n = quantityToNano(value);
  if (n === undefined) return undefined;
  return Number(ceilDiv(n, NANO * 1_048_576n));
}

/** Rounds a quantity up to whole base units ("1.5" → 2, 4 → 4). */
export function quantityToUnits(value: QuantityValue): number | undefined {
  const n = quantityToNano(value);
  if (n === undefined) return undefined;
  return Number(ceilDiv(n, NANO));
}

function ceilDiv(n: bigint, d: bigint): bigint {
  if (n >= 0n) return (n + d - 1n) / d;
  return n / d;
}

/** The integer units the core counts in: thousandths (CPU, fractional GPU quota), mebibytes, whole units. */
export type QuantityUnit = 'milli' | 'MiB' | 'count';

/**
 * A resource quantity in the core's integer unit, as Kubernetes reads it: resource.Quantity's MilliValue()
 * and Value() round up, and so does the conversion to MiB; `count` is for integer resources (extended
 * resources such as nvidia.com/gpu, and pods), which the apiserver rejects unless whole ("must be an
 * integer"), so a fraction is an error here too rather than being rounded. Negative values are errors as
 * for requests and capacity. `field` names where the value came from, for the error message.
 */
export function readQuantity(
  value: QuantityValue,
  unit: QuantityUnit,
  field: string,
): { readonly ok: true; readonly value: number } | { readonly ok: false; readonly error: string } {
  const n = quantityToNano(value);
  const shown = JSON.stringify(value);
  if (n === undefined) return { ok: false, error: `${field}: ${shown} is not a quantity (e.g. 500m, 1.5, 32Gi)` };
  if (n < 0n) return { ok: false, error: `${field}: ${shown} must not be negative` };
  switch (unit) {
    case 'milli':
      return { ok: true, value: Number(ceilDiv(n, 1_000_000n)) };
    case 'MiB':
      return { ok: true, value: Number(ceilDiv(n, NANO * 1_048_576n)) };
    case 'count':
      if (n % NANO !== 0n) return { ok: false, error: `${field}: ${shown} must be a whole number` };
      return { ok: true, value: Number(n / NANO) };
  }
}
