/** Every guard-rail rule, in the order docs/rules.md lists them. One file per rule in this folder. */
import type { Rule } from '../rule.ts';

export const RULES: readonly Rule[] = [];
