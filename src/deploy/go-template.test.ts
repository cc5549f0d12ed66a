import { describe, expect, it } from 'vitest';
import { goFloat, renderTemplate, TemplateError } from './go-template.ts';

const V = { Values: { a: { b: 'x' }, n: 8080, big: 1000000, f: 0.5, on: true, off: false, empty: '', list: ['p', 'q'], map: { z: 1, a: { c: '2' } }, none: {} }, Release: { Namespace: 'ns' } };
const r = (t: string): string => renderTemplate(t, V);

describe('Go template subset', () => {
  it('prints fields, with Helm number formatting and missing values as empty', () => {
    expect(r('{{ .Values.a.b }}/{{ .Release.Namespace }}/{{ .Values.n }}/{{ .Values.f }}/{{ .Values.big }}/[{{ .Values.missing }}]')).toBe('x/ns/8080/0.5/1e+06/[]');
    expect(r('{{ .Values.big | int }}')).toBe('1000000');
    expect([goFloat(123456), goFloat(1234567), goFloat(0.0001), goFloat(0.00001), goFloat(-2)]).toEqual(['123456', '1.234567e+06', '0.0001', '1e-05', '-2']);
  });

  it('trims whitespace with {{- and -}} exactly as text/template does', () => {
    expect(r('a  \n  {{- .Values.a.b }}  \n b')).toBe('ax  \n b');
    expect(r('a {{ .Values.a.b -}} \n\t b')).toBe('a xb');
    expect(r('a {{- /* gone */ -}} b')).toBe('ab');
    expect(r('{{/* comment */}}c')).toBe('c');
    expect(r('{{-3}}')).toBe('-3'); // a number, not a trim marker
  });

  it('if / else if / else / end and with, with Go truthiness', () => {
    const t = '{{ if .Values.off }}A{{ else if .Values.empty }}B{{ else if .Values.list }}C{{ else }}D{{ end }}';
    expect(r(t)).toBe('C');
    expect(r('{{ if .Values.none }}y{{ else }}n{{ end }}{{ if .Values.map }}y{{ end }}{{ if not .Values.on }}z{{ end }}')).toBe('ny');
    expect(r('{{ with .Values.a }}{{ .b }}{{ end }}{{ with .Values.empty }}no{{ else }}else{{ end }}')).toBe('xelse');
    expect(r('{{ if and .Values.on (gt .Values.n 80) }}big{{ end }}')).toBe('big');
  });

  it('quote, toYaml | nindent (sorted keys, no final newline), default, printf', () => {
    expect(r('{{ .Values.a.b | quote }} {{ .Values.n | quote }} {{ quote "a\\"b" }}')).toBe('"x" "8080" "a\\"b"');
    expect(r('m:{{- toYaml .Values.map | nindent 2 }}')).toBe('m:\n  a:\n    c: "2"\n  z: 1');
    expect(r('l:{{- toYaml .Values.list | nindent 2 }}')).toBe('l:\n  - p\n  - q');
    expect(r('{{ toYaml .Values.none }}')).toBe('{}');
    expect(r('{{ .Values.empty | default "d" }} {{ default "d" .Values.a.b }}')).toBe('d x');
    expect(r('{{ printf "%s:%d" .Values.a.b .Values.n }}')).toBe('x:8080');
  });

  it('fails loudly on what it does not support or cannot parse', () => {
    expect(() => r('{{ include "x" . }}')).toThrow(TemplateError);
    expect(() => r('{{ range .Values.list }}{{ end }}')).toThrow(/not supported/);
    expect(() => r('{{ nosuchfn .Values.a }}')).toThrow(/not defined/);
    expect(() => r('{{ if .Values.on }}x')).toThrow(/end/);
    expect(() => r('{{ end }}')).toThrow(/unexpected/);
    expect(() => r('{{ .Values.a')).toThrow(/unclosed/);
    expect(() => r('{{ required "need it" .Values.missing }}')).toThrow(/need it/);
  });
});
