import { Writable } from 'node:stream';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { addLogOptions, createLogger, levelOf, type LogOptions } from './logger.ts';

/** A logger writing into an array of lines. */
function capture(o: LogOptions): { lines: string[]; log: ReturnType<typeof createLogger> } {
  const lines: string[] = [];
  const dest = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(
        ...chunk
          .toString()
          .split('\n')
          .filter((l) => l !== ''),
      );
      cb();
    },
  });
  return { lines, log: createLogger('sits-test', o, dest) };
}

describe('createLogger', () => {
  it('json: one object a line with time, level, name and msg; warning:/error: prefixes set the level; trace ids become fields', () => {
    const { lines, log } = capture({ logFormat: 'json' });
    log.line('scheduler running');
    log.line('warning: VolumeSnapshot API not installed');
    log.line('error: cannot bind');
    log.line(`trainingjob ns/a: Pending → Running trace_id=${'a'.repeat(32)} span_id=${'b'.repeat(16)}`);
    log.pino.debug('hidden at v=0');
    const objs = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(objs.map((o) => [o['level'], o['msg']])).toEqual([
      [30, 'scheduler running'],
      [40, 'VolumeSnapshot API not installed'],
      [50, 'cannot bind'],
      [30, 'trainingjob ns/a: Pending → Running'],
    ]);
    expect(objs[3]).toMatchObject({ name: 'sits-test', trace_id: 'a'.repeat(32), span_id: 'b'.repeat(16) });
    expect(Date.parse(String(objs[0]?.['time']))).toBeGreaterThan(0);
  });

  it('text: one line each, ISO time, level and message, the trace ids still at the end', () => {
    const { lines, log } = capture({ logFormat: 'text' });
    log.line('scheduler running');
    log.line(`reconcile done trace_id=${'c'.repeat(32)} span_id=${'d'.repeat(16)}`);
    log.line('warning: KEDA absent');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^\[\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\] INFO: scheduler running$/);
    expect(lines[1]).toMatch(/ INFO: reconcile done trace_id=c{32} span_id=d{16}$/);
    expect(lines[2]).toMatch(/ WARN: KEDA absent$/);
  });

  it('-v and --v=N: debug from 1, trace from 5', () => {
    expect([levelOf(undefined), levelOf(true), levelOf(0), levelOf(2), levelOf(5)]).toEqual(['info', 'debug', 'info', 'debug', 'trace']);
    const { lines, log } = capture({ logFormat: 'json', v: 2 });
    log.pino.debug('shown');
    log.pino.trace('hidden');
    expect(lines.map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual(['shown']);
  });

  it('parses -v, --v=3 and --log-format; refuses a bad format', () => {
    const parse = (...args: string[]): Record<string, unknown> => {
      const c = addLogOptions(new Command('x').exitOverride().configureOutput({ writeErr: () => undefined }));
      c.parse(args, { from: 'user' });
      return c.opts();
    };
    expect(parse()).toEqual({ logFormat: 'text' });
    expect(parse('-v')).toEqual({ v: true, logFormat: 'text' });
    expect(parse('--v=3', '--log-format', 'json')).toEqual({ v: 3, logFormat: 'json' });
    expect(() => parse('--log-format', 'xml')).toThrow(/Allowed choices are text, json/);
  });
});
