import { InvalidArgumentError } from 'commander';

export const intOption =
  (name: string, min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER) =>
  (v: string): number => {
    const n = Number(v);
    if (!/^-?\d+$/.test(v.trim()) || n < min || n > max) throw new InvalidArgumentError(`${name} must be an integer between ${min} and ${max}, got "${v}"`);
    return n;
  };

export const numberOption =
  (name: string, min: number, max: number) =>
  (v: string): number => {
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n) || n < min || n > max) throw new InvalidArgumentError(`${name} must be a number between ${min} and ${max}, got "${v}"`);
    return n;
  };
