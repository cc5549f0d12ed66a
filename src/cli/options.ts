import { InvalidArgumentError } from 'commander';

/** `<why> (<what to do>)`: commander prefixes the flag; reportError makes it `sits: <cmd> <flag>: <why> (<what to do>)`. */
const range = (min: number, max: number, whole: boolean): string =>
  min === Number.MIN_SAFE_INTEGER && max === Number.MAX_SAFE_INTEGER
    ? `give a ${whole ? 'whole ' : ''}number, e.g. 42`
    : `give a ${whole ? 'whole ' : ''}number from ${min} to ${max}`;

export const intOption =
  (_name: string, min = Number.MIN_SAFE_INTEGER, max = Number.MAX_SAFE_INTEGER) =>
  (v: string): number => {
    const n = Number(v);
    if (!/^-?\d+$/.test(v.trim())) throw new InvalidArgumentError(`${JSON.stringify(v)} is not a whole number (${range(min, max, true)})`);
    if (n < min || n > max) throw new InvalidArgumentError(`${v} is out of range (${range(min, max, true)})`);
    return n;
  };

export const numberOption =
  (_name: string, min: number, max: number) =>
  (v: string): number => {
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n)) throw new InvalidArgumentError(`${JSON.stringify(v)} is not a number (${range(min, max, false)})`);
    if (n < min || n > max) throw new InvalidArgumentError(`${v} is out of range (${range(min, max, false)})`);
    return n;
  };
