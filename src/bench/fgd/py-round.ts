/**
 * Python's rounding, as the paper's analysis scripts apply it. `round(x)` rounds half to even; `round(x, 2)`
 * rounds the exact binary value of x (only exact binary halves are ties), which `toFixed` also does for
 * every value that is not an exact tie.
 */
export function pyRound(x: number): number {
  const f = Math.floor(x);
  const d = x - f;
  if (d < 0.5) return f;
  if (d > 0.5) return f + 1;
  return f % 2 === 0 ? f : f + 1;
}

export function pyRound2(x: number): number {
  return Number(x.toFixed(2));
}
