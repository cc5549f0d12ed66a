import { describe, expect, it } from 'vitest';
import {
  NON_NEGATIVE_QUANTITY_PATTERN,
  compareQuantities,
  isQuantity,
  isWholeQuantity,
  quantityToMiB,
  quantityToMilli,
  quantityToNano,
  quantityToUnits,
  readQuantity,
} from './quantity.ts';

describe('quantity parsing', () => {
  it('parses integers, decimal and binary suffixes and exponents exactly', () => {
    expect(quantityToNano(8)).toBe(8_000_000_000n);
    expect(quantityToNano('500m')).toBe(500_000_000n);
    expect(quantityToNano('1.5')).toBe(1_500_000_000n);
    expect(quantityToNano('.5')).toBe(500_000_000n);
    expect(quantityToNano('2k')).toBe(2_000_000_000_000n);
    expect(quantityToNano('1Ki')).toBe(1024n * 1_000_000_000n);
    expect(quantityToNano('1e3')).toBe(1000n * 1_000_000_000n);
    expect(quantityToNano('1n')).toBe(1n);
    expect(quantityToNano('-2')).toBe(-2_000_000_000n);
  });

  it('rejects what is not a quantity', () => {
    for (const bad of ['', ' 1', '1 ', 'abc', '1Gb', '1.2.3', '1e', 'Gi', '1e999']) expect(quantityToNano(bad), bad).toBeUndefined();
    expect(quantityToNano(Number.NaN)).toBeUndefined();
    expect(isQuantity({})).toBe(false);
    expect(isQuantity('32Gi')).toBe(true);
  });

  it('compares across units like the apiserver quantity library', () => {
    expect(compareQuantities('1Ti', '1024Gi')).toBe(0);
    expect(compareQuantities('9000Gi', '8Ti')).toBe(1);
    expect(compareQuantities('100m', '0.1')).toBe(0);
    expect(compareQuantities(16, '64')).toBe(-1);
    expect(compareQuantities('x', 1)).toBeUndefined();
  });

  it('tells whole quantities from fractional ones', () => {
    expect(isWholeQuantity(1)).toBe(true);
    expect(isWholeQuantity('2')).toBe(true);
    expect(isWholeQuantity('1000m')).toBe(true);
    expect(isWholeQuantity('1500m')).toBe(false);
    expect(isWholeQuantity('1.5')).toBe(false);
  });

  it('converts to the integer units the core uses, rounding up', () => {
    expect(quantityToMilli('500m')).toBe(500);
    expect(quantityToMilli(2)).toBe(2000);
    expect(quantityToMiB('32Gi')).toBe(32768);
    expect(quantityToMiB('1M')).toBe(1);
    expect(quantityToUnits('1.5')).toBe(2);
    expect(quantityToUnits('bad')).toBeUndefined();
  });

  it('has a schema pattern that accepts exactly the non-negative quantities', () => {
    const re = new RegExp(NON_NEGATIVE_QUANTITY_PATTERN);
    for (const ok of ['0', '1', '32Gi', '500m', '1.5', '.5', '1e3', '2E-2', '8Ti']) expect(re.test(ok), ok).toBe(true);
    for (const bad of ['-1', '+1', '1Gb', '', 'abc', '1e']) expect(re.test(bad), bad).toBe(false);
  });
});

describe('readQuantity (the core units, as Kubernetes rounds)', () => {
  const read = (v: string | number, unit: 'milli' | 'MiB' | 'count'): number | string => {
    const r = readQuantity(v, unit, 'f');
    return r.ok ? r.value : r.error;
  };
  it('rounds milli-units and MiB up, as MilliValue() and Value() do', () => {
    expect(read('.5', 'milli')).toBe(500);
    expect(read('100u', 'milli')).toBe(1);
    expect(read('1n', 'milli')).toBe(1);
    expect(read('1e3', 'milli')).toBe(1_000_000);
    expect(read(2, 'milli')).toBe(2000);
    expect(read('1Ki', 'MiB')).toBe(1);
    expect(read('1025Mi', 'MiB')).toBe(1025);
    expect(read('1Gi', 'MiB')).toBe(1024);
  });
  it('takes counts of integer resources only when whole', () => {
    expect(read('8', 'count')).toBe(8);
    expect(read('3000m', 'count')).toBe(3);
    expect(read('1.5', 'count')).toBe('f: "1.5" must be a whole number');
    expect(read(0.5, 'count')).toBe('f: 0.5 must be a whole number');
  });
  it('names the field when the text is not a quantity or is negative', () => {
    expect(read('1e3m', 'milli')).toBe('f: "1e3m" is not a quantity (e.g. 500m, 1.5, 32Gi)');
    expect(read('', 'milli')).toBe('f: "" is not a quantity (e.g. 500m, 1.5, 32Gi)');
    expect(read('-1', 'MiB')).toBe('f: "-1" must not be negative');
  });
});
